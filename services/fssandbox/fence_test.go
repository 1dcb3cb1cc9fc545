//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

func write(t *testing.T, f *fssandbox.FileSystem, p, content string, pol *sandbox.ExecutionPolicy) (fs.WriteOutcome, error) {
	t.Helper()
	tg, err := f.Resolve(context.Background(), p, fs.ResolveOptions{})
	require.NoError(t, err)
	return f.WriteText(context.Background(), tg, content, fs.WriteOptions{Policy: pol})
}

func TestSandboxModeIsTheDeploymentDefault(t *testing.T) {
	w := newWorld(t)
	for _, mode := range sandbox.Modes() {
		m, confines := w.sandbox(t, mode).SandboxMode()
		assert.True(t, confines, "S-01")
		assert.Equal(t, mode, m, "S-01")
	}
}

func TestReadOnly(t *testing.T) {
	w := newWorld(t)
	fixture.Build(t, w.ws, "a.txt: hello")
	f := w.sandbox(t, sandbox.ReadOnly)

	_, err := write(t, f, "new.txt", "x", nil)
	assertDenied(t, err, sandbox.ReadOnly)
	assert.Equal(t, `cannot write "`+filepath.Join(w.ws, "new.txt")+`": file access denied under read-only mode`, err.Error(), "S-02")
	assert.NoFileExists(t, filepath.Join(w.ws, "new.txt"))

	tg, err := f.Resolve(context.Background(), "a.txt", fs.ResolveOptions{})
	require.NoError(t, err)
	_, err = f.EditText(context.Background(), tg, fs.EditRequest{OldString: "hello", NewString: "bye"})
	assertDenied(t, err, sandbox.ReadOnly)
	assert.Contains(t, err.Error(), "cannot write ", "S-03 Z-6 edits say cannot write too")
	assert.Equal(t, "hello", readFile(t, filepath.Join(w.ws, "a.txt")))

	text, err := f.ReadText(context.Background(), tg)
	require.NoError(t, err, "S-04 reads pass through")
	assert.Equal(t, "hello", text)
}

func TestWorkspaceWrite(t *testing.T) {
	w := newWorld(t)
	fixture.Build(t, w.ws, "a.txt: hello")
	f := w.sandbox(t, sandbox.WorkspaceWrite)

	out, err := write(t, f, "nested/ok.txt", "x", nil)
	require.NoError(t, err)
	assert.Equal(t, fs.OpCreate, out.Operation, "S-05")
	assert.Equal(t, "x", readFile(t, filepath.Join(w.ws, "nested/ok.txt")))

	tg, err := f.Resolve(context.Background(), "a.txt", fs.ResolveOptions{})
	require.NoError(t, err)
	_, err = f.EditText(context.Background(), tg, fs.EditRequest{OldString: "hello", NewString: "bye"})
	require.NoError(t, err, "S-12")
	assert.Equal(t, "bye", readFile(t, filepath.Join(w.ws, "a.txt")))

	_, err = write(t, f, w.ws, "x", nil)
	require.ErrorIs(t, err, fs.ErrNotRegularFile, "S-14 the root itself passes the fence, then is not a file")
}

func TestWorkspaceWriteTempRoot(t *testing.T) {
	w := newWorld(t)
	f := newSandbox(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws}, w.ws)
	dir, err := os.MkdirTemp("", "harness-s06-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The default temp roots are the machine's /tmp, which the write's
	// protected-path search walks whole: on a loaded machine with a test
	// suite filling /tmp that took more than the search's own 30 s
	// (refused, fail closed: make test at load 13-18). The test's deadline
	// is its own.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	tg, err := f.Resolve(ctx, filepath.Join(dir, "tmp.txt"), fs.ResolveOptions{})
	require.NoError(t, err)
	_, err = f.WriteText(ctx, tg, "x", fs.WriteOptions{})
	require.NoError(t, err, "S-06 the OS temp dir is writable under workspace-write")
	assert.Equal(t, "x", readFile(t, filepath.Join(dir, "tmp.txt")))
}

func TestWorkspaceWriteOutsideOfTemp(t *testing.T) {
	w := newWorld(t)
	outside := fixture.OutsideDir(t) // under /var/tmp: outside /tmp and os.TempDir()
	f := newSandbox(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws}, w.ws)
	_, err := write(t, f, filepath.Join(outside, "x.txt"), "x", nil)
	assertDenied(t, err, sandbox.WorkspaceWrite)
	assert.NoFileExists(t, filepath.Join(outside, "x.txt"), "S-07 with the default temp roots")
}

func TestStaleKeyIsNeverWritten(t *testing.T) {
	w := newWorld(t)
	fixture.Build(t, w.outside, "victim.txt: safe")
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	stale := fs.Target{Key: fs.TargetKey(filepath.Join(w.outside, "victim.txt")), DisplayPath: filepath.Join(w.ws, "inside.txt")}
	// The test's own deadline, not the protected-path search's 30 s:
	// make test at load 13 refused this write after 49 s.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	_, err := f.WriteText(ctx, stale, "landed", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "landed", readFile(t, filepath.Join(w.ws, "inside.txt")), "S-13 the fresh target is written")
	assert.Equal(t, "safe", readFile(t, filepath.Join(w.outside, "victim.txt")), "S-13 the stale key is never written")
}

// Deliberate difference 12 supersedes S-15: a root of "/" grants nothing
// under workspace-write.
func TestFilesystemRootAsWorkspace(t *testing.T) {
	w := newWorld(t)
	_, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/", TempRoots: []string{}})
	require.ErrorContains(t, err, "use mode danger-full-access", "a configured root of / is a start error")

	f := newSandbox(t, sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: "/", TempRoots: []string{}}, w.ws)
	for _, pol := range []*sandbox.ExecutionPolicy{
		{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/"},
		{Mode: sandbox.WorkspaceWrite, OtherRoots: []string{"//", "/./"}},
	} {
		_, err = write(t, f, filepath.Join(w.outside, "anywhere.txt"), "x", pol)
		assertDenied(t, err, sandbox.WorkspaceWrite)
		assert.NoFileExists(t, filepath.Join(w.outside, "anywhere.txt"))
	}
}

func TestDangerFullAccess(t *testing.T) {
	w := newWorld(t)
	f := w.sandbox(t, sandbox.DangerFullAccess)
	_, err := write(t, f, filepath.Join(w.outside, "x.txt"), "x", nil)
	require.NoError(t, err, "S-16")
	assert.Equal(t, "x", readFile(t, filepath.Join(w.outside, "x.txt")))
}

func TestPerCallPolicy(t *testing.T) {
	w := newWorld(t)
	f := w.sandbox(t, sandbox.ReadOnly)

	_, err := write(t, f, "a.txt", "x", &sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws})
	require.NoError(t, err, "S-17 a per-call workspace-write lands")
	_, err = write(t, f, "b.txt", "x", nil)
	assertDenied(t, err, sandbox.ReadOnly)
	assert.NoFileExists(t, filepath.Join(w.ws, "b.txt"), "S-17 the next plain call is still denied")

	_, err = write(t, f, filepath.Join(w.outside, "x.txt"), "x", &sandbox.ExecutionPolicy{Mode: sandbox.DangerFullAccess})
	require.NoError(t, err, "S-18")
	assert.FileExists(t, filepath.Join(w.outside, "x.txt"))

	_, err = write(t, f, "c.txt", "x", &sandbox.ExecutionPolicy{Mode: "host-root", WorkspaceRoot: w.ws})
	assertDenied(t, err, "host-root")
	assert.NoFileExists(t, filepath.Join(w.ws, "c.txt"), "an unknown mode fails closed")

	other := &sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.outside}
	_, err = write(t, f, "d.txt", "x", other)
	assertDenied(t, err, sandbox.WorkspaceWrite)
	assert.NoFileExists(t, filepath.Join(w.ws, "d.txt"), "the policy's root decides, not the configured fallback")
	_, err = write(t, f, filepath.Join(w.outside, "d.txt"), "x", other)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(w.outside, "d.txt"))
}

func TestDenialIsDistinctFromHostPermission(t *testing.T) {
	w := newWorld(t)
	f := w.sandbox(t, sandbox.ReadOnly)
	_, err := write(t, f, "a.txt", "x", nil)
	require.ErrorIs(t, err, fs.ErrSandboxDenied, "S-20")
	assert.NotErrorIs(t, err, fs.ErrPermissionDenied)
	assert.EqualValues(t, fs.CodeSandboxDenied, fs.CodeOf(err))
}

func TestContainment(t *testing.T) {
	cases := []struct {
		name, root, path string
		want             bool
	}{
		{"S-21 the root itself", "/ws", "/ws", true},
		{"S-21 a child", "/ws", "/ws/child", true},
		{"S-21 anything under the filesystem root", "/", "/etc/passwd", true},
		{"S-24 an unrelated path", "/ws", "/other/x", false},
		{"a sibling with the root as prefix", "/ws", "/ws-evil/x", false},
		{"a sibling with the root as prefix, no slash", "/ws", "/ws2", false},
		{"the parent", "/ws/sub", "/ws", false},
		{"S-24 a missing (empty) root contains nothing", "", "/ws/x", false},
		{"a relative path is never contained", "/ws", "ws/x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dirfd.Beneath(tc.root, tc.path))
		})
	}
	t.Run("S-22 containment is case-sensitive on Linux", func(t *testing.T) {
		assert.False(t, dirfd.Beneath("/WS", "/ws/x"))
	})
	t.Run("S-23 a root given through a symlink contains the real path's missing children", func(t *testing.T) {
		w := newWorld(t)
		fixture.Build(t, w.base, "alias => ws")
		f := newSandbox(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: filepath.Join(w.base, "alias"), TempRoots: []string{}}, w.ws)
		_, err := write(t, f, filepath.Join(w.ws, "missing/file.txt"), "x", nil)
		require.NoError(t, err)
		assert.FileExists(t, filepath.Join(w.ws, "missing/file.txt"))
	})
	t.Run("S-24 a path through a regular file is not contained", func(t *testing.T) {
		w := newWorld(t)
		fixture.Build(t, w.ws, "blocker: x")
		f := w.sandbox(t, sandbox.WorkspaceWrite)
		_, err := f.Resolve(context.Background(), "blocker/child.txt", fs.ResolveOptions{})
		require.ErrorIs(t, err, fs.ErrNotFound)
		_, err = f.WriteText(context.Background(), fs.Target{Key: "x", DisplayPath: filepath.Join(w.ws, "blocker/child.txt")}, "x", fs.WriteOptions{})
		require.Error(t, err)
		assert.Equal(t, "x", readFile(t, filepath.Join(w.ws, "blocker")))
	})
}

// TestWorkspaceThroughSymlink: a workspace configured through a symlink
// allows both spellings, and retargeting the link after start does not move
// the fence.
func TestWorkspaceThroughSymlink(t *testing.T) {
	w := newWorld(t)
	link := filepath.Join(w.base, "wslink")
	require.NoError(t, os.Symlink(w.ws, link))
	f := newSandbox(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: link, TempRoots: []string{}}, link)

	_, err := write(t, f, filepath.Join(link, "via-link.txt"), "x", nil)
	require.NoError(t, err)
	_, err = write(t, f, filepath.Join(w.ws, "via-real.txt"), "x", nil)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(w.ws, "via-link.txt"))
	assert.FileExists(t, filepath.Join(w.ws, "via-real.txt"))

	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink(w.outside, link))
	before := fixture.Snapshot(t, w.outside)
	_, err = write(t, f, filepath.Join(link, "moved.txt"), "x", nil)
	assertDenied(t, err, sandbox.WorkspaceWrite)
	assert.Equal(t, before, fixture.Snapshot(t, w.outside), "the retargeted link does not move the fence")
	_, err = write(t, f, filepath.Join(w.ws, "still.txt"), "x", nil)
	require.NoError(t, err, "the original workspace stays writable")
}

func TestDeniedWriteCreatesNoParents(t *testing.T) {
	w := newWorld(t)
	fixture.Build(t, w.ws, "linkout => "+w.outside)
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	_, err := write(t, f, "linkout/newdir/deep.txt", "x", nil)
	assertDenied(t, err, sandbox.WorkspaceWrite)
	assert.NoDirExists(t, filepath.Join(w.outside, "newdir"), "S-10 Z-5")
}

// A target whose key equals its display path is not resolved again in user
// space (issue 15: one resolution per call): the kernel resolves it beneath
// the root's handle at the syscall, with the outcome of a fresh resolution.
// The key here was right when it was made; the tree changed after.
func TestKeyEqualToDisplayPathIsResolvedByTheKernel(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, w world)
		denied bool
		landed string // where the content lands, relative to w.base
	}{
		{
			name:   "a parent replaced by a symlink leaving the root",
			change: func(t *testing.T, w world) { swapForLink(t, filepath.Join(w.ws, "sub"), w.outside) },
			denied: true,
		},
		{
			name: "a parent replaced by a relative symlink beneath the root",
			change: func(t *testing.T, w world) {
				require.NoError(t, os.Mkdir(filepath.Join(w.ws, "real"), 0o755))
				swapForLink(t, filepath.Join(w.ws, "sub"), "real")
			},
			landed: "ws/real/f.txt",
		},
		{
			// RESOLVE_BENEATH refuses every absolute symlink: the race
			// fails closed where a fresh resolution would have admitted.
			name: "a parent replaced by an absolute symlink beneath the root",
			change: func(t *testing.T, w world) {
				require.NoError(t, os.Mkdir(filepath.Join(w.ws, "real"), 0o755))
				swapForLink(t, filepath.Join(w.ws, "sub"), filepath.Join(w.ws, "real"))
			},
			denied: true,
		},
		{
			// The publication replaces the planted link itself, inside the
			// root; the file it points to is never opened for writing.
			name: "the file replaced by a symlink leaving the root",
			change: func(t *testing.T, w world) {
				require.NoError(t, os.Remove(filepath.Join(w.ws, "sub", "f.txt")))
				require.NoError(t, os.Symlink(filepath.Join(w.outside, "f.txt"), filepath.Join(w.ws, "sub", "f.txt")))
			},
			landed: "ws/sub/f.txt",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			fixture.Build(t, w.ws, "sub/f.txt: before")
			fixture.Build(t, w.outside, "f.txt: outside")
			f := w.sandbox(t, sandbox.WorkspaceWrite)
			target, err := f.Resolve(context.Background(), filepath.Join(w.ws, "sub", "f.txt"), fs.ResolveOptions{})
			require.NoError(t, err)
			require.Equal(t, target.DisplayPath, string(target.Key))
			c.change(t, w)
			_, err = f.WriteText(context.Background(), target, "after", fs.WriteOptions{})
			if c.denied {
				assertDenied(t, err, sandbox.WorkspaceWrite)
			} else {
				require.NoError(t, err)
				assert.Equal(t, "after", readFile(t, filepath.Join(w.base, c.landed)))
			}
			assert.Equal(t, "outside", readFile(t, filepath.Join(w.outside, "f.txt")), "nothing outside the root changes")
			entries, err := os.ReadDir(w.outside)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "nothing is created outside the root")
		})
	}
}

// swapForLink replaces the directory dir by a symlink to dest.
func swapForLink(t *testing.T, dir, dest string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Symlink(dest, dir))
}

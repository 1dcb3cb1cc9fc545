//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// escapeCase is one spelling of a path that reaches (or tries to reach)
// outside the workspace. path is relative to the workspace unless absolute;
// "{out}" and "{base}" expand to the outside and base directories, and
// "{outfd}" to /proc/self/fd/N of a descriptor open on the outside directory.
type escapeCase struct {
	name string
	path string
	// allowed reports that workspace-write lets the mutation land (inside
	// the workspace); otherwise it must be denied or fail with an error.
	allowed bool
	// code, when set, is the error expected instead of a denial.
	code fs.Code
	// root marks a case whose fixture needs root (another user's link).
	root bool
}

var escapeCases = []escapeCase{
	{name: "a plain file inside is allowed", path: "inner.txt", allowed: true},
	{name: "a new file in new directories inside is allowed", path: "new/dir/f.txt", allowed: true},
	{name: "dot-dot traversal out is denied", path: "../outside/x.txt"},
	{name: "dot-dot through a subdirectory out is denied", path: "d/../../outside/x.txt"},
	{name: "dot-dot that stays inside is allowed", path: "d/../inner.txt", allowed: true},
	{name: "a sibling-prefix directory ws-evil is denied", path: "{base}/ws-evil/x.txt"},
	{name: "a sibling-prefix directory ws2 is denied", path: "{base}/ws2/x.txt"},
	{name: "an absolute path outside is denied", path: "{out}/x.txt"},
	{name: "an existing file outside is denied", path: "{out}/secret.txt"},
	{name: "a directory symlink pointing out is denied", path: "linkout/x.txt"},
	{name: "a relative directory symlink pointing out is denied", path: "rellinkout/x.txt"},
	{name: "a missing tail under a symlink pointing out is denied", path: "linkout/newdir/deep.txt"},
	{name: "an existing file through a symlink pointing out is denied", path: "linkout/secret.txt"},
	{name: "a file symlink pointing out is denied", path: "filelink"},
	{name: "a chained file symlink pointing out is denied", path: "chainfile"},
	{name: "a trailing slash on an escaping link is denied", path: "linkout/"},
	{name: "a trailing dot on an escaping link is denied", path: "linkout/."},
	{name: "a double slash through an escaping link is denied", path: "linkout//x.txt"},
	{name: "a dangling symlink pointing out replaces the link, never the outside", path: "dangling", allowed: true},
	{name: "a chained dangling symlink pointing out replaces the link", path: "chaindangling", allowed: true},
	{name: "a symlink loop is an error", path: "loop", code: fs.CodeIOError},
	{name: "a path through a symlink loop is an error", path: "loop/x.txt", code: fs.CodeIOError},
	{name: "/proc/self/root spelling of an outside path is denied", path: "/proc/self/root{out}/x.txt"},
	{name: "/proc/self/cwd spelling outside is denied", path: "/proc/self/cwd/x.txt"},
	{name: "/proc/self/fd spelling of an outside directory is denied", path: "{outfd}/x.txt"},
	{name: "an in-workspace link to /proc/self/root is denied", path: "procroot{out}/x.txt"},
	{name: "a NUL byte is an error", path: "in\x00ner.txt", code: fs.CodeNotFound},
	{name: "a component over NAME_MAX is an error", path: strings.Repeat("n", 300), code: fs.CodeIOError},
	{name: "a path over PATH_MAX is an error", path: strings.Repeat("d/", 2100) + "x", code: fs.CodeIOError},
	{name: "a hard link to an outside file is replaced, the outside file kept", path: "hard.txt", allowed: true},
	{name: ".git/config is a protected path", path: ".git/config"},
	{name: "a new hook in .git/hooks is a protected path", path: ".git/hooks/pre-commit"},
	{name: "a nested repository's .git is a protected path", path: "sub/repo/.git/config"},
	{name: "a .git not yet created is a protected path", path: "fresh/.git/config"},
	{name: "a link inside the workspace to .git is a protected path", path: "gitlink/config"},
	{name: "dot-dot into .git is a protected path", path: "d/../.git/config"},
	{name: "the gitdir a .git file points to is a protected path", path: "store/wt.git/config"},
	{name: "the .git file itself is a protected path", path: "wt/.git"},
	{name: "an .hg directory is a protected path", path: "m/.hg/hgrc"},
	{name: "a .jj directory is a protected path", path: ".jj/repo/config.toml"},
	{name: "an .svn directory is a protected path", path: ".svn/wc.db"},
	{name: "another user's link in a sticky world-writable directory is not followed", path: "shared/theirs", code: fs.CodePermissionDenied, root: true},
	{name: "another user's directory link in a sticky directory is not followed", path: "shared/theirdir/inner.txt", code: fs.CodePermissionDenied, root: true},
}

// buildEscapeWorld lays out the fixtures every escape case needs and returns
// the expansion of the placeholders.
func buildEscapeWorld(t *testing.T, w world) *strings.Replacer {
	t.Helper()
	fixture.Build(t, w.outside, "secret.txt: secret", "sub/", "chained.txt: chained secret")
	fixture.Build(t, w.ws,
		"inner.txt: inner secret",
		"d/",
		"linkout => "+w.outside,
		"rellinkout => ../outside",
		"filelink => "+w.outside+"/secret.txt",
		"chainfile => chain2",
		"chain2 => "+w.outside+"/chained.txt",
		"dangling => "+w.outside+"/new.txt",
		"chaindangling => chain3",
		"chain3 => "+w.outside+"/new2.txt",
		"loop => loop",
		"procroot => /proc/self/root",
		".git/HEAD: ref: refs/heads/main",
		".git/config: [core] secret",
		".git/hooks/",
		".git/objects/",
		".git/refs/",
		"sub/repo/.git/config: [core] secret",
		"gitlink => .git",
		"wt/.git: gitdir: ../store/wt.git",
		"store/wt.git/HEAD: ref: refs/heads/main",
		"store/wt.git/config: [core] secret",
		"store/wt.git/objects/",
		"store/wt.git/refs/",
		"shared/",
		"shared/theirs => ../inner.txt",
		"shared/theirdir => ..",
	)
	shared := filepath.Join(w.ws, "shared")
	require.NoError(t, os.Chmod(shared, 0o777|os.ModeSticky))
	if os.Geteuid() == 0 {
		// Another user's links, in a sticky world-writable directory of
		// this process's user.
		for _, l := range []string{"theirs", "theirdir"} {
			require.NoError(t, os.Lchown(filepath.Join(shared, l), otherUID, otherUID))
		}
	}
	require.NoError(t, os.Link(filepath.Join(w.outside, "secret.txt"), filepath.Join(w.ws, "hard.txt")))
	dir, err := os.Open(w.outside)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dir.Close() })
	return strings.NewReplacer("{out}", w.outside, "{base}", w.base, "{outfd}", "/proc/self/fd/"+strconv.Itoa(int(dir.Fd())))
}

// mutation is one way of mutating a target through the fence.
type mutation struct {
	name string
	run  func(ctx context.Context, f *fssandbox.FileSystem, tg fs.Target) error
}

var mutations = []mutation{
	{"write", func(ctx context.Context, f *fssandbox.FileSystem, tg fs.Target) error {
		_, err := f.WriteText(ctx, tg, "pwned", fs.WriteOptions{})
		return err
	}},
	{"guarded create", func(ctx context.Context, f *fssandbox.FileSystem, tg fs.Target) error {
		_, err := f.WriteText(ctx, tg, "pwned", fs.WriteOptions{Intent: fs.CreateOnly()})
		return err
	}},
	{"edit", func(ctx context.Context, f *fssandbox.FileSystem, tg fs.Target) error {
		_, err := f.EditText(ctx, tg, fs.EditRequest{OldString: "secret", NewString: "pwned", ReplaceAll: true})
		return err
	}},
	{"dry-run write", func(ctx context.Context, f *fssandbox.FileSystem, tg fs.Target) error {
		_, err := f.WriteText(ctx, tg, "pwned", fs.WriteOptions{DryRun: true})
		return err
	}},
	{"dry-run multi-edit", func(ctx context.Context, f *fssandbox.FileSystem, tg fs.Target) error {
		_, err := f.EditText(ctx, tg, fs.EditRequest{DryRun: true, Edits: []fs.Replacement{{OldString: "secret", NewString: "pwned", ReplaceAll: true}, {OldString: "pwned", NewString: "owned"}}})
		return err
	}},
}

// TestEscapeMatrix runs every escape case through every mutation under each
// mode, and checks the disk: under workspace-write an escape is denied (or an
// error) and nothing outside the workspace changes; under read-only
// everything is denied and nothing changes anywhere; under
// danger-full-access the backend behaves like the OS and never hangs.
func TestEscapeMatrix(t *testing.T) {
	for _, mode := range sandbox.Modes() {
		for _, m := range mutations {
			for _, tc := range escapeCases {
				t.Run(string(mode)+"/"+m.name+"/"+tc.name, func(t *testing.T) {
					escapeCheck(t, mode, m, tc, fssandbox.Config{})
				})
			}
		}
	}
}

// TestEscapeMatrixFallback runs the matrix's workspace-write cases on the
// fallback without Landlock (--landlock off), which must hold them alike.
func TestEscapeMatrixFallback(t *testing.T) {
	for _, m := range mutations {
		for _, tc := range escapeCases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				escapeCheck(t, sandbox.WorkspaceWrite, m, tc, fssandbox.Config{Landlock: fssandbox.LandlockOff})
			})
		}
	}
}

// escapeCheck runs one escape case through one mutation under mode and
// checks the disk.
func escapeCheck(t *testing.T, mode sandbox.Mode, m mutation, tc escapeCase, fence fssandbox.Config) {
	t.Helper()
	if mode == sandbox.DangerFullAccess && strings.HasPrefix(tc.path, "/proc/self/cwd") {
		t.Skip("danger-full-access would write into the test's working directory, the package source")
	}
	if tc.root && os.Geteuid() != 0 {
		t.Skip("planting another user's link needs root (chown)")
	}
	w := newWorld(t)
	expand := buildEscapeWorld(t, w)
	f := newFence(t, sandboxpolicy.Config{Mode: mode, WorkspaceRoot: w.ws, TempRoots: []string{}}, w.ws, fence)
	outsideBefore := fixture.Snapshot(t, w.outside)
	siblingsBefore := siblings(t, w)
	wsBefore := fixture.Snapshot(t, w.ws)

	err := withinHangBound(t, func() error {
		tg, err := f.Resolve(context.Background(), expand.Replace(tc.path), fs.ResolveOptions{})
		if err != nil {
			return err
		}
		return m.run(context.Background(), f, tg)
	})

	assert.Empty(t, fixture.Residue(t, w.base), "no staging residue anywhere")
	switch mode {
	case sandbox.DangerFullAccess:
		return // like the OS: any outcome but a hang or a panic
	case sandbox.ReadOnly:
		require.Error(t, err)
		if tc.code == "" || fs.CodeOf(err) == fs.CodeSandboxDenied {
			assertDenied(t, err, mode)
		}
		assert.Equal(t, wsBefore, fixture.Snapshot(t, w.ws), "read-only changed the workspace")
	case sandbox.WorkspaceWrite:
		switch {
		case tc.code != "":
			require.Error(t, err)
			assert.EqualValues(t, tc.code, fs.CodeOf(err), "error: %v", err)
			assert.Equal(t, wsBefore, fixture.Snapshot(t, w.ws), "a failed mutation changed the workspace")
		case !tc.allowed:
			assertDenied(t, err, mode)
			assert.Equal(t, wsBefore, fixture.Snapshot(t, w.ws), "a denied mutation changed the workspace")
		}
	}
	assert.Equal(t, outsideBefore, fixture.Snapshot(t, w.outside), "the outside directory changed")
	assert.Equal(t, siblingsBefore, siblings(t, w), "a sibling directory changed")
}

// TestEscapeMatrixAllowedLandsInside checks where the allowed cases land.
func TestEscapeMatrixAllowedLandsInside(t *testing.T) {
	for _, tc := range escapeCases {
		if !tc.allowed {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			expand := buildEscapeWorld(t, w)
			f := w.sandbox(t, sandbox.WorkspaceWrite)
			tg, err := f.Resolve(context.Background(), expand.Replace(tc.path), fs.ResolveOptions{})
			require.NoError(t, err)
			_, err = f.WriteText(context.Background(), tg, "landed", fs.WriteOptions{})
			require.NoError(t, err)
			p := filepath.Join(w.ws, filepath.Clean(tc.path))
			info, err := os.Lstat(p)
			require.NoError(t, err)
			assert.True(t, info.Mode().IsRegular(), "a regular file inside at %s", p)
			assert.Equal(t, "landed", readFile(t, p))
			assert.Equal(t, "secret", readFile(t, filepath.Join(w.outside, "secret.txt")))
			assert.NoFileExists(t, filepath.Join(w.outside, "new.txt"))
			assert.NoFileExists(t, filepath.Join(w.outside, "new2.txt"))
		})
	}
}

func assertDenied(t *testing.T, err error, mode sandbox.Mode) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, fs.ErrSandboxDenied, "error: %v", err)
	fe, ok := err.(*fs.Error) //nolint:errorlint // the fence returns *fs.Error itself
	require.True(t, ok)
	assert.Equal(t, mode, fe.Mode)
	assert.True(t, strings.HasPrefix(fe.Message, "cannot write "), fe.Message)
	assert.True(t, strings.HasSuffix(fe.Message, ": file access denied under "+string(mode)+" mode"), fe.Message)
}

func siblings(t *testing.T, w world) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range []string{"ws-evil", "ws2"} {
		for k, v := range fixture.Snapshot(t, filepath.Join(w.base, d)) {
			out[d+"/"+k] = v
		}
	}
	return out
}

// withinHangBound runs call and fails the test if it does not return
// within hangBound: no input may hang the fence. The bound is generous on
// purpose (a hang is forever; a plain write took over a second on a
// 2-core machine at load 10 under -race), and the test waits for the call
// before its cleanups close what the call uses.
func withinHangBound(t *testing.T, call func() error) error {
	t.Helper()
	return within(t, hangBound, call)
}

// hangBound is how long a call may take before it counts as hanging.
const hangBound = 10 * time.Second

// within is withinHangBound with bound d; a late call fails the test but is
// still awaited (up to a minute) so it never races the test's cleanup.
func within(t *testing.T, d time.Duration, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Errorf("the call did not return within %v", d)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the call hung")
		return nil
	}
}

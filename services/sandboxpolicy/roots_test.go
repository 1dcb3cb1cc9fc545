package sandboxpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

func TestCanonicalPath(t *testing.T) {
	dir := realTempDir(t)
	mkdir(t, filepath.Join(dir, "a", "b"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "f.txt"), []byte("x"), 0o600))
	symlink(t, filepath.Join(dir, "a", "b"), filepath.Join(dir, "link"))
	symlink(t, "a/b", filepath.Join(dir, "rel-link"))
	symlink(t, "f.txt", filepath.Join(dir, "a", "file-link"))
	symlink(t, filepath.Join(dir, "link"), filepath.Join(dir, "link-to-link"))
	requireMissing(t, "/no-such-harness-dir")

	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "X-01 an existing canonical directory is unchanged", in: dir, want: dir},
		{name: "X-01 an absolute directory symlink resolves to its target", in: filepath.Join(dir, "link"), want: filepath.Join(dir, "a", "b")},
		{name: "X-01 a relative directory symlink resolves against its directory", in: filepath.Join(dir, "rel-link"), want: filepath.Join(dir, "a", "b")},
		{name: "X-01 a chain of symlinks is followed to the end", in: filepath.Join(dir, "link-to-link"), want: filepath.Join(dir, "a", "b")},
		{name: "X-01 a file symlink resolves to the file", in: filepath.Join(dir, "a", "file-link"), want: filepath.Join(dir, "a", "f.txt")},
		{name: "X-01 .. after a symlink is applied to the target, component-wise, not lexically", in: filepath.Join(dir, "link") + "/..", want: filepath.Join(dir, "a")},
		{name: "X-01 a path through a symlinked parent resolves the parent", in: filepath.Join(dir, "link") + "/../f.txt", want: filepath.Join(dir, "a", "f.txt")},
		{name: "X-01 . and redundant separators are removed from an existing path", in: dir + "//a/./b/", want: filepath.Join(dir, "a", "b")},
		{name: "X-02 a missing path is returned exactly as spelled", in: "/no-such-harness-dir/../x/./y/", want: "/no-such-harness-dir/../x/./y/"},
		{name: "X-02 a missing leaf under a symlink is returned exactly as spelled", in: filepath.Join(dir, "link") + "/missing/..", want: filepath.Join(dir, "link") + "/missing/.."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, sandboxpolicy.CanonicalPath(tc.in))
		})
	}
}

func TestWritableRootsOutsideWorkspaceWrite(t *testing.T) {
	dir := realTempDir(t)
	svc := mustNew(t, sandboxpolicy.Config{TempRoots: []string{mkdir(t, filepath.Join(dir, "tmp"))}})
	ws := mkdir(t, filepath.Join(dir, "ws"))

	tests := []struct {
		name string
		mode sandbox.Mode
	}{
		{name: "X-03 read-only has no writable roots", mode: sandbox.ReadOnly},
		{name: "X-04 danger-full-access has no writable roots (it needs no list)", mode: sandbox.DangerFullAccess},
		{name: "fail closed: an unknown mode has no writable roots", mode: "host-root"},
		{name: "fail closed: an empty mode has no writable roots", mode: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Empty(t, stamped(sandbox.ExecutionPolicy{Mode: tc.mode, WorkspaceRoot: ws}, svc).WritableRoots())
		})
	}
}

func TestWritableRootsDefaultTempRoots(t *testing.T) {
	dir := realTempDir(t)
	ws := mkdir(t, filepath.Join(dir, "ws"))
	tmp := canonical(t, "/tmp")

	t.Run("X-04 with TMPDIR a symlink to /tmp the canonical temp roots are deduplicated", func(t *testing.T) {
		t.Setenv("TMPDIR", symlink(t, "/tmp", filepath.Join(dir, "tmp-link")))
		require.NotEqual(t, "/tmp", os.TempDir(), "fixture precondition: os.TempDir() is spelled differently")
		svc := mustNew(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite})
		assert.Equal(t, []string{tmp}, svc.Default().TempRoots)
		assert.Equal(t, []string{ws, tmp}, stamped(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}, svc).WritableRoots())
	})

	t.Run("X-04 with TMPDIR another directory reached through a symlink both temp roots are canonical", func(t *testing.T) {
		other := mkdir(t, filepath.Join(dir, "other-tmp"))
		t.Setenv("TMPDIR", symlink(t, other, filepath.Join(dir, "other-tmp-link")))
		svc := mustNew(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite})
		assert.Equal(t, []string{tmp, other}, svc.Default().TempRoots)
		assert.Equal(t, []string{ws, tmp, other}, stamped(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}, svc).WritableRoots())
	})

	t.Run("X-04 temp roots are pinned at construction: a later TMPDIR change does not move them", func(t *testing.T) {
		other := mkdir(t, filepath.Join(dir, "pinned-tmp"))
		t.Setenv("TMPDIR", other)
		svc := mustNew(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite})
		t.Setenv("TMPDIR", mkdir(t, filepath.Join(dir, "later-tmp")))
		assert.Equal(t, []string{ws, tmp, other}, stamped(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}, svc).WritableRoots())
	})
}

func TestWritableRootsWorkspaceWrite(t *testing.T) {
	dir := realTempDir(t)
	ws := mkdir(t, filepath.Join(dir, "ws"))
	t1 := mkdir(t, filepath.Join(dir, "t1"))
	t2 := mkdir(t, filepath.Join(dir, "t2"))
	wsLink := symlink(t, ws, filepath.Join(dir, "ws-link"))
	t1Link := symlink(t, t1, filepath.Join(dir, "t1-link"))
	wsSibling := mkdir(t, filepath.Join(dir, "ws2"))
	wsSiblingDash := mkdir(t, filepath.Join(dir, "ws-tmp"))

	tests := []struct {
		name      string
		tempRoots []string
		root      string
		want      []string
	}{
		{
			name:      "X-04 the workspace root comes first, then the temp roots",
			tempRoots: []string{t1, t2},
			root:      ws,
			want:      []string{ws, t1, t2},
		},
		{
			name:      "X-04 explicit temp roots reached through a symlink are canonical",
			tempRoots: []string{t1Link, t2},
			root:      ws,
			want:      []string{ws, t1, t2},
		},
		{
			name:      "a policy's workspace root is taken as the policy carries it, not resolved again (Resolve canonicalizes)",
			tempRoots: []string{t1},
			root:      wsLink,
			want:      []string{wsLink, t1},
		},
		{
			name:      "X-04 a workspace root equal to a temp root appears once",
			tempRoots: []string{t1, t2},
			root:      t1,
			want:      []string{t1, t2},
		},
		{
			name:      "a relative workspace root grants nothing (fail closed)",
			tempRoots: []string{t1},
			root:      "relative/ws",
			want:      []string{t1},
		},
		{
			name:      "a workspace root with a NUL byte grants nothing (fail closed)",
			tempRoots: []string{t1},
			root:      ws + "\x00/..",
			want:      []string{t1},
		},
		{
			name:      "X-04 sibling-prefix roots stay distinct (ws, ws2, ws-tmp)",
			tempRoots: []string{wsSibling, wsSiblingDash},
			root:      ws,
			want:      []string{ws, wsSibling, wsSiblingDash},
		},
		{
			name:      "X-04 a missing workspace root is kept as spelled, cleaned",
			tempRoots: []string{t1},
			root:      dir + "/not-yet/../ws-new/",
			want:      []string{dir + "/ws-new", t1},
		},
		{
			name:      "X-04 with no temp roots only the workspace root is writable",
			tempRoots: []string{},
			root:      ws,
			want:      []string{ws},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := mustNew(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, TempRoots: tc.tempRoots})
			got := stamped(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: tc.root}, svc).WritableRoots()
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("X-04 the writable roots of a resolved session policy are its canonical cwd and the temp roots", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, TempRoots: []string{t1}})
		p := svc.Resolve(session.New("s", wsLink), sandbox.FileTools, "")
		assert.Equal(t, []string{ws, t1}, stamped(p, svc).WritableRoots())
	})

	t.Run("WritableRoots returns a fresh slice: changing it changes nothing", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, TempRoots: []string{t1}})
		p := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}
		got := stamped(p, svc).WritableRoots()
		got[1] = "/"
		assert.Equal(t, []string{ws, t1}, stamped(p, svc).WritableRoots())
		assert.Equal(t, []string{t1}, svc.Default().TempRoots)
	})
}

func TestWritableRootsExtraRoots(t *testing.T) {
	dir := realTempDir(t)
	ws := mkdir(t, filepath.Join(dir, "ws"))
	tmp := mkdir(t, filepath.Join(dir, "tmp"))
	cache := mkdir(t, filepath.Join(dir, "cache"))
	link := symlink(t, cache, filepath.Join(dir, "cache-link"))

	svc := mustNew(t, sandboxpolicy.Config{TempRoots: []string{tmp}, WritableRoots: []string{link, tmp}})
	t.Run("extra roots follow the temp roots, canonical and deduplicated", func(t *testing.T) {
		assert.Equal(t, []string{tmp}, svc.Default().TempRoots)
		assert.Equal(t, []string{cache, tmp}, svc.Default().ExtraRoots)
		assert.Equal(t, []string{ws, tmp, cache}, stamped(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}, svc).WritableRoots())
	})
	t.Run("extra roots grant nothing in read-only", func(t *testing.T) {
		assert.Empty(t, stamped(sandbox.ExecutionPolicy{Mode: sandbox.ReadOnly, WorkspaceRoot: ws}, svc).WritableRoots())
	})
	for _, bad := range []string{"/", "relative/dir", "", symlink(t, "/", filepath.Join(dir, "root-link"))} {
		t.Run("fail closed: extra root "+bad+" is refused", func(t *testing.T) {
			_, err := sandboxpolicy.New(sandboxpolicy.Config{WritableRoots: []string{bad}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "WritableRoots")
		})
	}
}

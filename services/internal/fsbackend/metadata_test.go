//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// onDisk is what the metadata tests check of a file on disk.
type onDisk struct {
	content  string
	mode     os.FileMode
	uid, gid uint32
}

func diskState(t *testing.T, p string) onDisk {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return onDisk{content: string(b), mode: os.FileMode(st.Mode & 0o7777), uid: st.Uid, gid: st.Gid}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return st.Ino
}

// withUmask runs the test with umask 022, the usual one, and restores it.
func withUmask(t *testing.T) {
	t.Helper()
	old := unix.Umask(0o022)
	t.Cleanup(func() { unix.Umask(old) })
}

// Issue 13 item 1 (spec difference 9): a server running as root in a
// workspace owned by 1000:1000 keeps main.c 1000:1000 0644 through a write
// and an edit, and gives a new file (and new directories) the workspace
// root's owner, mode 0644 under umask 022.
func TestRootServerKeepsTheWorkspaceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the case is a server running as root")
	}
	withUmask(t)
	ws := filepath.Join(realTempDir(t), "ws")
	fixture.Build(t, filepath.Dir(ws), "ws/main.c: int main(void) { return 0; }\n")
	// The file tools act as the owner (issue 35): it must be able to reach
	// its workspace, which the test's 0700 temporary directories forbid.
	for _, d := range []string{filepath.Dir(filepath.Dir(ws)), filepath.Dir(ws)} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	for _, p := range []string{ws, filepath.Join(ws, "main.c")} {
		require.NoError(t, os.Chown(p, 1000, 1000))
	}
	require.NoError(t, os.Chmod(filepath.Join(ws, "main.c"), 0o644))
	owner, err := fslocal.RootOwner(ws)
	require.NoError(t, err)
	require.Equal(t, &fslocal.Owner{UID: 1000, GID: 1000}, owner)
	f, err := fslocal.New(fslocal.Config{Cwd: ws, NewOwner: owner}, nil)
	require.NoError(t, err)
	ctx := context.Background()

	_, err = f.WriteText(ctx, resolve(t, f, "main.c"), "int main(void) { return 1; }\n", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, onDisk{"int main(void) { return 1; }\n", 0o644, 1000, 1000}, diskState(t, filepath.Join(ws, "main.c")), "write")
	out, err := f.EditText(ctx, resolve(t, f, "main.c"), fs.EditRequest{OldString: "return 1", NewString: "return 2"})
	require.NoError(t, err)
	assert.Empty(t, out.InPlace, "published atomically")
	assert.Equal(t, onDisk{"int main(void) { return 2; }\n", 0o644, 1000, 1000}, diskState(t, filepath.Join(ws, "main.c")), "edit")

	_, err = f.WriteText(ctx, resolve(t, f, "new/deep/util.c"), "x\n", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, onDisk{"x\n", 0o644, 1000, 1000}, diskState(t, filepath.Join(ws, "new/deep/util.c")), "new file")
	for _, d := range []string{"new", "new/deep"} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(ws, d), &st))
		assert.Equal(t, [2]uint32{1000, 1000}, [2]uint32{st.Uid, st.Gid}, "created directory %s", d)
	}
	assert.Empty(t, fixture.Residue(t, ws))

	// The switch off: new files stay root's.
	plain, err := fslocal.New(fslocal.Config{Cwd: ws}, nil)
	require.NoError(t, err)
	_, err = plain.WriteText(ctx, resolve(t, plain, "root.c"), "y\n", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, onDisk{"y\n", 0o644, 0, 0}, diskState(t, filepath.Join(ws, "root.c")))
}

// Spec difference 9: RootOwner is nil for a root-owned workspace.
func TestRootOwnerOfARootOwnedWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the case is a server running as root")
	}
	owner, err := fslocal.RootOwner(realTempDir(t))
	require.NoError(t, err)
	assert.Nil(t, owner)
	_, err = fslocal.RootOwner(filepath.Join(realTempDir(t), "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Issue 13 item 2 as root: a file with no write bit at all is not replaced,
// though root could.
func TestRootDoesNotWriteAReadOnlyFile(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "locked.txt: original\n")
	p := filepath.Join(dir, "locked.txt")
	require.NoError(t, os.Chmod(p, 0o444))
	want := diskState(t, p)
	_, err := f.WriteText(context.Background(), resolve(t, f, "locked.txt"), "changed\n", fs.WriteOptions{})
	expectFSErr(t, err, fs.ErrPermissionDenied, `cannot write "`+p+`": permission denied: the file is not writable`)
	_, err = f.EditText(context.Background(), resolve(t, f, "locked.txt"), fs.EditRequest{OldString: "original", NewString: "changed"})
	expectFSErr(t, err, fs.ErrPermissionDenied, "")
	assert.Equal(t, want, diskState(t, p))
	assert.Empty(t, fixture.Residue(t, dir))
}

// Issue 13 items 1, 2 and 3 through a non-root server (the test re-run as
// nobody): a 0444 file of its own is refused and unchanged; a root-owned
// file it may write keeps its owner (rewritten in place); a writable file
// in a directory it may not write is rewritten in place by write and by
// edit, and the outcome says it was not atomic; a new file there is refused
// with the directory named.
func TestPermissionIntentAsNobody(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(nobodyEnv) == "" {
		t.Skip("the fixture holds files of another user and of root (chown), which only root can make; the root pass runs it as nobody")
	}
	dir, run := asNobody(t, func(dir string) {
		fixture.Build(t, dir, "ws/locked.txt: original\n", "ws/shared.txt: original\n", "ro_dir/writable.txt: original\n")
		require.NoError(t, os.Chmod(filepath.Join(dir, "ws/shared.txt"), 0o666)) // root's
		for _, p := range []string{"ws", "ws/locked.txt", "ro_dir/writable.txt"} {
			require.NoError(t, os.Chown(filepath.Join(dir, p), 65534, 65534))
		}
		require.NoError(t, os.Chmod(filepath.Join(dir, "ws/locked.txt"), 0o444))
		require.NoError(t, os.Chmod(filepath.Join(dir, "ro_dir"), 0o755))
		require.NoError(t, os.Chmod(filepath.Join(dir, "ro_dir/writable.txt"), 0o666))
	})
	if !run {
		return
	}
	ctx := context.Background()
	f, err := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	require.NoError(t, err)

	locked := filepath.Join(dir, "ws/locked.txt")
	want := diskState(t, locked)
	_, err = f.EditText(ctx, resolve(t, f, locked), fs.EditRequest{OldString: "original", NewString: "changed"})
	expectFSErr(t, err, fs.ErrPermissionDenied, `cannot write "`+locked+`": permission denied: the file is not writable`)
	_, err = f.WriteText(ctx, resolve(t, f, locked), "changed\n", fs.WriteOptions{})
	expectFSErr(t, err, fs.ErrPermissionDenied, "")
	assert.Equal(t, want, diskState(t, locked), "the read-only file is unchanged")

	// A file of another owner, writable by all, in a directory of its own:
	// a new file could not take root's ownership, so it is rewritten in
	// place rather than given away to nobody.
	shared := filepath.Join(dir, "ws/shared.txt")
	ino := inode(t, shared)
	w, err := f.WriteText(ctx, resolve(t, f, shared), "shared\n", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Contains(t, w.InPlace, "owner", "the write says it kept the owner by rewriting in place")
	assert.Equal(t, onDisk{"shared\n", 0o666, 0, 0}, diskState(t, shared))
	assert.Equal(t, ino, inode(t, shared))

	writable := filepath.Join(dir, "ro_dir/writable.txt")
	ino = inode(t, writable)
	w, err = f.WriteText(ctx, resolve(t, f, writable), "written\n", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Contains(t, w.InPlace, "directory", "the write says it was rewritten in place, and why")
	assert.Equal(t, onDisk{"written\n", 0o666, 65534, 65534}, diskState(t, writable))
	e, err := f.EditText(ctx, resolve(t, f, writable), fs.EditRequest{OldString: "written", NewString: "edited"})
	require.NoError(t, err)
	assert.NotEmpty(t, e.InPlace, "the edit says it was rewritten in place")
	assert.Equal(t, onDisk{"edited\n", 0o666, 65534, 65534}, diskState(t, writable))
	assert.Equal(t, ino, inode(t, writable), "the same file, rewritten in place")

	fresh := filepath.Join(dir, "ro_dir/new.txt")
	_, err = f.WriteText(ctx, resolve(t, f, fresh), "x\n", fs.WriteOptions{})
	expectFSErr(t, err, fs.ErrPermissionDenied, `cannot write "`+fresh+`": permission denied: the directory "`+
		filepath.Join(dir, "ro_dir")+`" does not allow this process to create or replace files in it`)
	_, err = os.Lstat(fresh)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Empty(t, fixture.Residue(t, dir))
}

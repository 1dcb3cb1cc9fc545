//go:build linux

package fssandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// dirWatch reports the directories the kernel saw opened beneath some
// trees (inotify IN_OPEN on each directory, which fires for any open of
// the directory but an O_PATH one: a listing needs one, a stat or a path
// resolution does not).
type dirWatch struct {
	fd    int
	paths map[int]string // watch descriptor -> directory
}

func watchDirs(t *testing.T, roots ...string) *dirWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	w := &dirWatch{fd: fd, paths: map[int]string{}}
	for _, root := range roots {
		require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			wd, err := unix.InotifyAddWatch(fd, p, unix.IN_OPEN|unix.IN_ONLYDIR)
			if err != nil {
				return err
			}
			w.paths[wd] = p
			return nil
		}))
	}
	w.opened() // the walk above opened them all
	return w
}

// opened returns the watched directories opened since the last call.
func (w *dirWatch) opened() []string {
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n <= 0 || err != nil {
			return out
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off])) //nolint:gosec // the kernel's event layout
			if ev.Mask&unix.IN_ISDIR != 0 && ev.Len == 0 {
				out = append(out, w.paths[int(ev.Wd)])
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// TestDenyReadNeverWalksATree: the deny-read decision of a write, an edit, a
// move, a delete, a read, a stat, a listing, a glob and a grep in the
// workspace opens no directory of a denied directory (a credential store of
// 1,000 files, `--deny-read <base>/vault`) nor of the tree an anchored
// pattern with `**` reaches (`--deny-read <base>/tree/**/*.pem`, 1,000
// files): the kernel sees none of their directories opened (inotify).
// The operations run twice, the second time after the fence's identity
// snapshot expired. The first snapshot lists the denied directory once, for
// the symlinks it holds (a key linked out of it is denied by identity), and
// a later one only stats its directories while they are unchanged. Only a
// read of a file with more than one link on their filesystem lists the
// denied directories again (the hard-link check), and still never the `**`
// pattern's tree.
func TestDenyReadNeverWalksATree(t *testing.T) {
	ctx := context.Background()
	base, err := os.MkdirTemp("/var/tmp", "fence-nowalk-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	home, ws, vault, tree := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "vault"), filepath.Join(base, "tree")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte(keyMarker+"\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "a.txt"), []byte("plain\n"), 0o644))
	fillTree(t, vault, 40, 25)
	fillTree(t, tree, 40, 25)
	require.NoError(t, os.WriteFile(filepath.Join(tree, "d3", "x.pem"), []byte(keyMarker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(vault, "d7", "f3.txt"), []byte(keyMarker+"\n"), 0o600))

	// The vault's directories as a credential store's are: unchanged for
	// a while (a listing made within 2 s of a change is not kept).
	hourAgo := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(vault, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chtimes(p, hourAgo, hourAgo)
	}))

	f := newSandbox(t, sandboxpolicy.Config{
		Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}, Homes: []string{home},
		DenyRead: []string{vault, tree + "/**/*.pem"},
	}, ws)
	resolve := func(p string) fs.Target {
		tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
		require.NoError(t, err)
		return tg
	}
	// The first snapshot lists the vault once, for the links it holds
	// (linksOut); never again while it is unchanged.
	_, err = f.ReadText(ctx, resolve("sub/a.txt"))
	require.NoError(t, err)
	watch := watchDirs(t, vault, tree)
	ops := []struct {
		name string
		run  func() error
	}{
		{"write a new file", func() error {
			_, err := f.WriteText(ctx, resolve("sub/new.txt"), "new\n", fs.WriteOptions{})
			return err
		}},
		{"replace a file", func() error {
			_, err := f.WriteText(ctx, resolve("sub/a.txt"), "plain\n", fs.WriteOptions{})
			return err
		}},
		{"edit", func() error {
			_, err := f.EditText(ctx, resolve("sub/a.txt"), fs.EditRequest{OldString: "plain", NewString: "edited"})
			return err
		}},
		{"read", func() error {
			_, err := f.ReadText(ctx, resolve("sub/a.txt"))
			return err
		}},
		{"stat", func() error {
			_, err := f.Stat(ctx, resolve("sub/a.txt"))
			return err
		}},
		{"list", func() error {
			_, err := f.ListDir(ctx, resolve("."), fs.ListWindow{Depth: 2})
			return err
		}},
		{"glob", func() error {
			_, err := f.Glob(ctx, resolve("."), fs.GlobOptions{Pattern: "**/*"})
			return err
		}},
		{"grep", func() error {
			_, err := f.Grep(ctx, resolve("."), fs.GrepOptions{Pattern: "plain"})
			return err
		}},
		{"move", func() error {
			_, err := f.Move(ctx, resolve("sub/new.txt"), resolve("sub/moved.txt"), fs.MoveOptions{})
			return err
		}},
		{"delete", func() error {
			_, err := f.Remove(ctx, resolve("sub/moved.txt"), fs.RemoveOptions{})
			return err
		}},
		{"mkdir", func() error {
			_, err := f.Mkdir(ctx, resolve("sub/dir"), fs.MkdirOptions{Parents: true})
			return err
		}},
		{"read a denied file by its path", func() error {
			_, err := f.ReadText(ctx, resolve(filepath.Join(tree, "d3", "x.pem")))
			if fs.CodeOf(err) != fs.CodeReadDenied {
				return errors.New("not refused: " + errString(err))
			}
			return nil
		}},
	}
	for pass := range 2 {
		if pass == 1 {
			time.Sleep(2100 * time.Millisecond) // the identity snapshot is taken again
		}
		for _, op := range ops {
			require.NoError(t, op.run(), op.name)
			assert.Empty(t, watch.opened(), "%s opened directories of a denied tree", op.name)
		}
	}

	// A hard link into the vault is refused; finding it lists the vault
	// (the denied directory), never the `**` pattern's tree.
	require.NoError(t, os.Link(filepath.Join(vault, "d7", "f3.txt"), filepath.Join(ws, "hl")))
	text, err := f.ReadText(ctx, resolve("hl"))
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
	assert.NotContains(t, text, keyMarker)
	for _, dir := range watch.opened() {
		assert.True(t, dir == vault || filepath.Dir(dir) == vault, "the hard-link check opened %s", dir)
	}
	// A file with one link does not list it again, nor anything else.
	_, err = f.ReadText(ctx, resolve("sub/a.txt"))
	require.NoError(t, err)
	assert.Empty(t, watch.opened())
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

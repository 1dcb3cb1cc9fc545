//go:build linux

package subproc

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStrayMountPointsRemovesOnlyWhatWasMade: of the mount points recorded
// before a start, clear removes an empty read-only file or an empty
// directory made since in place of what was there (a socket removed and
// an empty file made: the file system may give the new file the socket's
// inode number), and leaves alone what was there all along, what was there
// before the record, and a file someone may be writing.
func TestStrayMountPointsRemovesOnlyWhatWasMade(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	// Outside every writable root: read-only in the view, where bubblewrap
	// makes nothing; what is there is never removed.
	outside := filepath.Join(other, "id_ed25519")
	require.NoError(t, os.WriteFile(outside, []byte("KEY\n"), 0o600))
	l, err := net.Listen("unix", at("s.sock"))
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, os.WriteFile(at(".env"), []byte("TOKEN=1\n"), 0o600))
	require.NoError(t, os.WriteFile(at("kept"), nil, 0o444))
	require.NoError(t, os.WriteFile(at("before"), nil, 0o444))
	c := &Confinement{
		WritableRoots: []string{dir},
		MaskedSockets: []string{at("s.sock"), at("gone.sock"), at("kept"), at("writable")},
		Masked:        []Masked{{Path: at(".env")}, {Path: at(".secrets"), Dir: true}, {Path: at("before")}, {Path: outside}},
	}
	s := recordMountPoints(c, uint32(os.Geteuid()))
	// What bubblewrap makes where the paths were gone when it mounted.
	require.NoError(t, l.Close())
	require.NoError(t, os.Remove(at("s.sock")))
	require.NoError(t, os.WriteFile(at("s.sock"), nil, 0o444))
	require.NoError(t, os.WriteFile(at("gone.sock"), nil, 0o444))
	require.NoError(t, os.Remove(at(".env")))
	require.NoError(t, os.WriteFile(at(".env"), nil, 0o444))
	require.NoError(t, os.Mkdir(at(".secrets"), 0o755))
	require.NoError(t, os.Remove(outside))
	require.NoError(t, os.WriteFile(outside, nil, 0o444))
	// Not bubblewrap's: a file with a write bit.
	require.NoError(t, os.WriteFile(at("writable"), nil, 0o644))
	s.clear()
	s.clear()
	var left []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, []string{"before", "kept", "writable"}, left)
	_, err = os.Lstat(outside)
	assert.NoError(t, err, "outside the writable roots nothing is removed")
}

// TestStrayMountPointsFollowNoSymlink (review of issue 34): a concurrent
// command swaps a directory above a masked socket for a symlink between
// the record and the removal; what is removed is still looked for in the
// directory recorded, so a reservation's placeholder outside every writable
// root (a home's `.gitconfig`, which another command then could write) is
// never removed, nor one inside.
func TestStrayMountPointsFollowNoSymlink(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, "u"), 0o755))
	target := filepath.Join(home, "u", ".gitconfig")
	r, err := ReserveFile(target, "")
	require.NoError(t, err)
	require.NotNil(t, r)
	t.Cleanup(func() { ReleaseAll(r) })
	sock := filepath.Join(root, "x", "a", "u", ".gitconfig")
	require.NoError(t, os.MkdirAll(filepath.Dir(sock), 0o755))
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	inside := filepath.Join(root, ".mcp.json")
	ri, err := ReserveFile(inside, "")
	require.NoError(t, err)
	require.NotNil(t, ri)
	t.Cleanup(func() { ReleaseAll(ri) })
	s := recordMountPoints(&Confinement{WritableRoots: []string{root}, MaskedSockets: []string{sock, filepath.Join(root, "gone.sock")}, Masked: []Masked{{Path: inside}}}, uint32(os.Geteuid()))
	require.NoError(t, os.Rename(filepath.Join(root, "x", "a"), filepath.Join(root, "x", "a.real")))
	require.NoError(t, os.Symlink(home, filepath.Join(root, "x", "a")))
	// The reservation inside is released and made again meanwhile (a
	// new inode, its ctime now).
	ReleaseAll(ri)
	ri, err = ReserveFile(inside, "")
	require.NoError(t, err)
	require.NotNil(t, ri)
	s.clear()
	_, err = os.Lstat(target)
	assert.NoError(t, err, "the placeholder outside the writable root is still there")
	_, err = os.Lstat(inside)
	assert.NoError(t, err, "the placeholder inside is still there")
	st, err := os.Lstat(filepath.Join(root, "x", "a.real", "u", ".gitconfig"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, st.Mode().Type(), "the masked socket, moved with its directory, is left alone")
}

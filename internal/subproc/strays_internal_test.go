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
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	l, err := net.Listen("unix", at("s.sock"))
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, os.WriteFile(at(".env"), []byte("TOKEN=1\n"), 0o600))
	require.NoError(t, os.WriteFile(at("kept"), nil, 0o444))
	require.NoError(t, os.WriteFile(at("before"), nil, 0o444))
	c := &Confinement{
		WritableRoots: []string{dir},
		MaskedSockets: []string{at("s.sock"), at("gone.sock"), at("kept"), at("writable")},
		Masked:        []Masked{{Path: at(".env")}, {Path: at(".secrets"), Dir: true}, {Path: at("before")}},
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
}

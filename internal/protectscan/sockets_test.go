//go:build linux

package protectscan_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
)

// TestScanSockets (issue 34): with Options.Sockets a scan finds the socket
// files by their entry's type, at any depth, and nothing else (a regular
// file, a FIFO, a directory, a symlink to a socket); a socket bound after a
// scan is found by the next, whose earlier result was kept current.
func TestScanSockets(t *testing.T) {
	base := tempRoot(t)
	bind := func(rel string) string {
		p := filepath.Join(base, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		ln, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		return p
	}
	top, deep := bind("s"), bind("a/b/s")
	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o644))
	require.NoError(t, unix.Mkfifo(filepath.Join(base, "fifo"), 0o644))
	require.NoError(t, os.Symlink(top, filepath.Join(base, "link")))
	require.NoError(t, os.Mkdir(filepath.Join(base, ".git"), 0o755))

	s := protectscan.New(protectscan.Options{Sockets: true})
	paths := func() []string {
		entries, err := s.Scan(t.Context(), []protectscan.Root{{Path: base}}, nil)
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			out = append(out, e.Path)
		}
		return out
	}
	assert.Equal(t, []string{deep, top}, paths())
	later := bind("a/later")
	assert.Equal(t, []string{deep, later, top}, paths())
}

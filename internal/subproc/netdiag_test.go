//go:build linux

package subproc_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// fileID is the identity of the file at path (lstat).
func fileID(t *testing.T, path string) subproc.FileID {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(path, &st))
	return subproc.FileID{Dev: uint64(st.Dev), Ino: st.Ino} //nolint:unconvert // Dev is uint64 on most arches only
}

// TestNetNSUnixDiag: the namespace's socket diagnostics name the file a
// socket bound inside it is bound to, by identity, also once the file has
// been renamed; a socket the server binds in its own namespace is not
// among them; a closed namespace is refused.
func TestNetNSUnixDiag(t *testing.T) {
	requireLandlock(t)
	b := sandbox(t)
	b.Net = netNS(t, b)
	d, err := b.Net.UnixDiag(b.Stage, nil)
	require.NoError(t, err)
	defer d.Close() //nolint:errcheck // test

	dir := t.TempDir()
	host := filepath.Join(dir, "host.sock")
	ln, err := net.Listen("unix", host)
	require.NoError(t, err)
	defer ln.Close() //nolint:errcheck // test

	inner, moved := filepath.Join(dir, "inner.sock"), filepath.Join(dir, "moved.sock")
	done := make(chan subproc.Outcome, 1)
	go func() {
		out, _ := subproc.RunBwrap(t.Context(), b, subproc.Spec{
			Command: `python3 -c 'import socket,os,time; s=socket.socket(socket.AF_UNIX); s.bind("inner.sock"); s.listen(1); os.rename("inner.sock", "moved.sock"); open("ready","w").close()
while not os.path.exists("stop"): time.sleep(0.02)'`,
			Dir: dir, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Confine: &subproc.Confinement{WritableRoots: []string{dir}, OwnUnixSockets: true},
		}, 40*time.Second, 1<<20, nil, subproc.Watch{})
		done <- out
	}()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the command never bound its socket")
	bound, err := d.Bound()
	require.NoError(t, err)
	assert.True(t, bound[fileID(t, moved)], "the command's socket, renamed after its bind")
	assert.False(t, bound[fileID(t, host)], "the server's own socket is in another namespace")
	_, err = os.Lstat(inner)
	assert.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644))
	out := <-done
	assert.Equal(t, 0, out.Status.ExitCode, out.Stderr.String())
	bound, err = d.Bound()
	require.NoError(t, err)
	assert.False(t, bound[fileID(t, moved)], "its socket closed with it")

	require.NoError(t, b.Net.Close())
	_, err = b.Net.UnixDiag(b.Stage, nil)
	require.ErrorIs(t, err, subproc.ErrNetNSClosed)
}

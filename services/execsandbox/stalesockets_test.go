package execsandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// leaveSocket binds a Unix socket at path and closes it without removing
// the file, as a server that stopped without cleaning up leaves it: a
// socket file no process is bound to any more.
func leaveSocket(t *testing.T, path string) {
	t.Helper()
	dir, err := os.Open(filepath.Dir(path))
	require.NoError(t, err)
	defer func() { _ = dir.Close() }()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer func() { _ = unix.Close(fd) }()
	// Through the directory's descriptor: a test's path may be longer than
	// a socket address holds.
	at := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	require.NoError(t, unix.Bind(fd, &unix.SockaddrUnix{Name: at}))
	require.NoError(t, unix.Listen(fd, 1))
	// Any user may connect to it, were it bound.
	require.NoError(t, os.Chmod(path, 0o777))
}

// TestStaleUnixSocketsLeftBehind (issue 36): a socket file no process is
// bound to any more (a host server stopped without removing it, a test
// server of an earlier command that exited without unlinking) is not
// masked: the next command removes it and binds there again, as a test
// suite run twice does. A live host socket beside them stays masked, and
// telling them apart connects to neither (the listener accepts nothing).
func TestStaleUnixSocketsLeftBehind(t *testing.T) {
	py := python3(t)
	if subproc.Probe().ResolveUnix {
		t.Skip("Landlock ABI 9 limits connects by itself; the masks are not used")
	}
	w := newWorld(t, primaryOwner(), hexec.Config{}, nil)
	stale := filepath.Join(w.ws, "stale.sock")
	leaveSocket(t, stale)
	live := fixtures.ListenUnix(t, filepath.Join(w.ws, "live.sock"))
	var was unix.Stat_t
	require.NoError(t, unix.Lstat(live.Path, &was))

	bind := py + ` -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("left.sock"); s.listen(1); print("bound")'`
	res := w.run(t, sandbox.WorkspaceWrite, bind)
	require.Equal(t, "bound\n", res.Stdout.Text, res.Stderr.Text)
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(w.ws, "left.sock"), &st), "the command's server left its socket file")
	require.Equal(t, uint32(unix.S_IFSOCK), st.Mode&unix.S_IFMT)

	res = w.run(t, sandbox.WorkspaceWrite, "rm stale.sock left.sock && "+bind)
	assert.Equal(t, 0, res.ExitCode, res.Stderr.Text)
	assert.Equal(t, "bound\n", res.Stdout.Text, res.Stderr.Text)
	_, err := os.Lstat(stale)
	assert.ErrorIs(t, err, os.ErrNotExist, "the stale host socket was removed")
	var again unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(w.ws, "left.sock"), &again))
	assert.Equal(t, uint32(unix.S_IFSOCK), again.Mode&unix.S_IFMT)
	assert.NotEqual(t, st.Ino, again.Ino, "bound anew")

	res = w.run(t, sandbox.WorkspaceWrite, "rm -f live.sock; "+fixtures.ConnectUnix(fixtures.Perl(t), "x", live.Path))
	assert.Contains(t, res.Stderr.Text, "Device or resource busy", "the live socket is masked")
	assert.Contains(t, res.Stdout.Text, "FAIL", res.Stderr.Text)
	var now unix.Stat_t
	require.NoError(t, unix.Lstat(live.Path, &now))
	assert.Equal(t, was.Ino, now.Ino, "the live socket is where it was")
	n, lines := live.Accepted()
	assert.Zero(t, n, "the live socket accepted %v", lines)
}

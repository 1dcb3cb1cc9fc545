//go:build linux

package execsandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
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
	// Told apart by inode number and birth time: ext4 may give the next
	// socket the number the removed one freed (seen in CI).
	identity := func(p string) (uint16, [2]int64) {
		t.Helper()
		var stx unix.Statx_t
		require.NoError(t, unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_TYPE|unix.STATX_BTIME, &stx), p)
		return stx.Mode & unix.S_IFMT, [2]int64{int64(stx.Ino), stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)}
	}
	kind, first := identity(filepath.Join(w.ws, "left.sock"))
	require.Equal(t, uint16(unix.S_IFSOCK), kind, "the command's server left its socket file")

	res = w.run(t, sandbox.WorkspaceWrite, "rm stale.sock left.sock && "+bind)
	assert.Equal(t, 0, res.ExitCode, res.Stderr.Text)
	assert.Equal(t, "bound\n", res.Stdout.Text, res.Stderr.Text)
	_, err := os.Lstat(stale)
	assert.ErrorIs(t, err, os.ErrNotExist, "the stale host socket was removed")
	kind, again := identity(filepath.Join(w.ws, "left.sock"))
	assert.Equal(t, uint16(unix.S_IFSOCK), kind)
	assert.NotEqual(t, first, again, "bound anew")

	res = w.run(t, sandbox.WorkspaceWrite, "rm -f live.sock; "+fixtures.ConnectUnix(fixtures.Perl(t), "x", live.Path))
	assert.Contains(t, res.Stderr.Text, "Device or resource busy", "the live socket is masked")
	assert.Contains(t, res.Stdout.Text, "FAIL", res.Stderr.Text)
	var now unix.Stat_t
	require.NoError(t, unix.Lstat(live.Path, &now))
	assert.Equal(t, was.Ino, now.Ino, "the live socket is where it was")
	n, lines := live.Accepted()
	assert.Zero(t, n, "the live socket accepted %v", lines)
}

// exchangeLoop is a command that swaps the directories a and b of its
// workdir (renameat2 RENAME_EXCHANGE, x86_64 system call 316) every
// 200-1100 µs for secs seconds, then prints how many swaps worked and the
// last error.
func exchangeLoop(perl string, secs int) string {
	return fmt.Sprintf(`%s -MTime::HiRes=usleep,time -e '$t = time + %d; $n = 0; $i = 0; $x = "a"; $y = "b"; while (time < $t) { if (syscall(316, -100, $x, -100, $y, 2) == 0) { $n++ } else { $e = "$!" } usleep(200 + ($i++ %% 7) * 150) } print "swaps $n err $e\n"'`, perl, secs)
}

// TestStaleSocketSwappedWithALiveOne (the attack review of issue 36): a
// live host socket at ws/a/s.sock, a stale socket file at ws/b/s.sock,
// and a background command of the session swapping ws/a and ws/b while
// other commands start and try both paths. Under workspace-write the
// directories on the way to a masked socket are pinned in the swapping
// command's view (EBUSY), so the check of the stale file cannot be made
// to judge the live socket's place: no command reaches the live socket.
// Under danger-full-access, where nothing is pinned, the stale file is
// masked like any other (TestStaleSocketMaskedUnderFullAccess).
func TestStaleSocketSwappedWithALiveOne(t *testing.T) {
	longTest(t)
	requireBwrapAndLandlock(t)
	if subproc.Probe().ResolveUnix {
		t.Skip("Landlock ABI 9 limits connects by itself; the masks are not used")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the swap is the x86_64 renameat2 system call")
	}
	perl := fixtures.Perl(t)
	s, pol := newSecretHome(t, primaryOwner())
	a, b := filepath.Join(s.ws, "a"), filepath.Join(s.ws, "b")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.Mkdir(b, 0o755))
	live := fixtures.ListenUnix(t, filepath.Join(a, "s.sock"))
	leaveSocket(t, filepath.Join(b, "s.sock"))
	if os.Geteuid() == 0 {
		require.NoError(t, chownTree(s.ws, primaryOwner().uid))
	}
	r, err := execsandbox.New(execsandbox.Config{}, hexec.Config{}, pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	run := func(command string) hexec.Result {
		res, err := r.Run(t.Context(), hexec.Request{
			Command: command, Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.WorkspaceWrite, s.ws),
		})
		require.NoError(t, err)
		return res
	}
	swapper := make(chan hexec.Result, 1)
	go func() { swapper <- run(exchangeLoop(perl, 6)) }()
	time.Sleep(300 * time.Millisecond)
	for range 30 {
		res := run(fixtures.ConnectUnix(perl, "hi", filepath.Join(a, "s.sock"), filepath.Join(b, "s.sock")))
		assert.NotContains(t, res.Stdout.Text, " OK ")
	}
	sw := <-swapper
	t.Logf("the swapping command: %q %q", sw.Stdout.Text, sw.Stderr.Text)
	n, lines := live.Accepted()
	assert.Zero(t, n, "the live host socket accepted %v", lines)
}

// TestStaleSocketMaskedUnderFullAccess (the attack review of issue 36):
// under danger-full-access with deny-read on, a stale socket file found in
// the workspace is masked like a live one (a command cannot remove it),
// since nothing pins its directory there; under workspace-write the next
// command removes it.
func TestStaleSocketMaskedUnderFullAccess(t *testing.T) {
	requireBwrapAndLandlock(t)
	if subproc.Probe().ResolveUnix {
		t.Skip("Landlock ABI 9 limits connects by itself; the masks are not used")
	}
	s, pol := newSecretHome(t, primaryOwner())
	stale := filepath.Join(s.ws, "stale.sock")
	leaveSocket(t, stale)
	if os.Geteuid() == 0 {
		require.NoError(t, chownTree(s.ws, primaryOwner().uid))
	}
	r, err := execsandbox.New(execsandbox.Config{}, hexec.Config{}, pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	for _, tc := range []struct {
		mode    sandbox.Mode
		removed bool
	}{{sandbox.DangerFullAccess, false}, {sandbox.WorkspaceWrite, true}} {
		res, err := r.Run(t.Context(), hexec.Request{
			Command: "rm stale.sock", Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, tc.mode, s.ws),
		})
		require.NoError(t, err)
		_, statErr := os.Lstat(stale)
		if tc.removed {
			assert.Equal(t, 0, res.ExitCode, "%s: %s", tc.mode, res.Stderr.Text)
			assert.ErrorIs(t, statErr, os.ErrNotExist, tc.mode)
		} else {
			assert.Contains(t, res.Stderr.Text, "Device or resource busy", tc.mode)
			assert.NoError(t, statErr, tc.mode)
		}
	}
}

//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// spareRunner returns a runner with the default configuration (a proxy,
// commands' own sockets) and the Bwrap its commands would use (the
// server's user).
func spareRunner(t *testing.T) (*Runner, subproc.Bwrap) {
	t.Helper()
	r, b, _ := spareRunnerWith(t, Config{})
	return r, b
}

// spareRunnerWith is spareRunner with cfg, and the runner's workspace.
func spareRunnerWith(t *testing.T, cfg Config) (*Runner, subproc.Bwrap, string) {
	t.Helper()
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("no Landlock")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: ws, TempRoots: []string{}, WritableRoots: []string{}, Homes: []string{}})
	require.NoError(t, err)
	r, err := New(cfg, exec.Config{}, pol)
	require.NoError(t, err)
	exe, err := r.bwrap.exe()
	if err != nil {
		t.Skip(err)
	}
	stage, err := r.bwrap.stage()
	require.NoError(t, err)
	return r, subproc.Bwrap{Exe: exe, Stage: stage}, ws
}

// TestOneCallMakesNoSpare: a runner serving a single call (harness call)
// makes no namespace ahead, neither in its warm-up nor after its session's
// command: its process would wait for it at its end.
func TestOneCallMakesNoSpare(t *testing.T) {
	r, _, ws := spareRunnerWith(t, Config{OneCall: true})
	t.Cleanup(func() { _ = r.Close() })
	n := r.bwrap.nets
	none := func(when string) {
		t.Helper()
		n.mu.Lock()
		defer n.mu.Unlock()
		require.Nil(t, n.spare, when)
		require.Nil(t, n.preparing, when)
	}
	r.Warm(t.Context())
	none("after the warm-up")
	tracker := session.NewTracker()
	s := tracker.Start("s", ws)
	t.Cleanup(func() { tracker.End(s) })
	policy := r.policy.Default()
	policy.Mode = sandbox.WorkspaceWrite
	res, err := r.Run(session.NewContext(t.Context(), s), exec.Request{Command: "true", Workdir: ws, Timeout: time.Minute, Policy: &policy})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
	none("after the session's command")
}

// foreignNets returns the network namespaces (other than this process's)
// that a socket this process holds belongs to (SIOCGSKNS), and the plain
// namespace descriptors it holds.
func foreignNets(t *testing.T) (bySocket, byFile []string) {
	own, _ := os.Readlink("/proc/self/ns/net")
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue
		}
		if strings.HasPrefix(l, "net:[") {
			byFile = append(byFile, l)
			continue
		}
		if !strings.HasPrefix(l, "socket:") {
			continue
		}
		nsfd, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
		if err != nil {
			continue
		}
		ns, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(nsfd))
		_ = unix.Close(nsfd)
		if ns != own {
			bySocket = append(bySocket, "fd "+e.Name()+" "+l+" in "+ns)
		}
	}
	return bySocket, byFile
}

func waitSpare(t *testing.T, n *sessionNets) {
	t.Helper()
	require.Eventually(t, func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.spare != nil
	}, 10*time.Second, 5*time.Millisecond, "no spare made")
}

// TestSpareTakenWhileTheRunnerCloses (issue 34, attack review): a
// session's first command takes the spare (with its socket diagnostics:
// ownSockets, the default) and the runner closes while the command's gate
// is being opened (the default configuration has a proxy); join, seeing the
// runner stopped, lets the namespace go, the spare's diagnostics socket
// with it (it held the namespace for the life of the process).
func TestSpareTakenWhileTheRunnerCloses(t *testing.T) {
	leaked := 0
	for i := range 10 {
		r, b := spareRunner(t)
		n := r.bwrap.nets
		require.True(t, n.ownSockets)
		beforeSock, beforeFile := foreignNets(t)
		n.refill(b)
		waitSpare(t, n)
		tracker := session.NewTracker()
		s := tracker.Start("s", "/")
		errc := make(chan error, 1)
		go func() {
			_, _, err := n.join(s, b)
			errc <- err
		}()
		require.Eventually(t, func() bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.spare == nil
		}, 10*time.Second, 100*time.Microsecond)
		require.NoError(t, r.Close())
		err := <-errc
		tracker.End(s)
		time.Sleep(100 * time.Millisecond)
		afterSock, afterFile := foreignNets(t)
		t.Logf("round %d: join: %v; sockets in other namespaces %d -> %d; ns files %d -> %d", i, err, len(beforeSock), len(afterSock), len(beforeFile), len(afterFile))
		if len(afterSock) > len(beforeSock) {
			leaked++
			t.Logf("  held after Close: %v", afterSock[len(beforeSock):])
		}
	}
	require.Zero(t, leaked, "rounds where a socket in a spare's namespace outlived Close")
}

// TestSpareManyFirstCommandsAndClose (issue 34, attack review): many
// sessions' first commands at once beside refills and a Close; afterwards
// nothing is held, and no two sessions got the same namespace.
func TestSpareManyFirstCommandsAndClose(t *testing.T) {
	for round := range 12 {
		r, b := spareRunner(t)
		n := r.bwrap.nets
		beforeSock, beforeFile := foreignNets(t)
		n.refill(b)
		tracker := session.NewTracker()
		var (
			mu  sync.Mutex
			got = map[*subproc.NetNS]int{}
			wg  sync.WaitGroup
		)
		for i := range 8 {
			wg.Go(func() {
				s := tracker.Start("s"+strconv.Itoa(i), "/")
				ns, _, err := n.join(s, b)
				if err == nil {
					mu.Lock()
					got[ns]++
					mu.Unlock()
				}
				n.refill(b)
				if i%2 == 0 {
					tracker.End(s)
				}
			})
		}
		time.Sleep(time.Duration([]int{0, 15, 40, 80, 150, 300}[round%6]) * time.Millisecond)
		require.NoError(t, r.Close())
		wg.Wait()
		for ns, c := range got {
			require.Equal(t, 1, c, "namespace %p given to %d sessions", ns, c)
		}
		time.Sleep(100 * time.Millisecond)
		afterSock, afterFile := foreignNets(t)
		t.Logf("round %d: joined %d; sockets %d -> %d; ns files %d -> %d", round, len(got), len(beforeSock), len(afterSock), len(beforeFile), len(afterFile))
		require.LessOrEqual(t, len(afterFile), len(beforeFile), "namespace files held after Close")
		require.LessOrEqual(t, len(afterSock), len(beforeSock), "sockets in other namespaces held after Close: %v", afterSock)
	}
}

//go:build linux

package execsandbox_test

import (
	"context"
	"errors"
	"maps"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// netOf is the network namespace a command of ctx's session sees
// ("net:[N]").
func netOf(ctx context.Context, t *testing.T, w world) string {
	t.Helper()
	res, err := w.r.Run(ctx, exec.Request{
		Command: "readlink /proc/self/ns/net", Workdir: w.ws, Timeout: time.Minute,
		Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
	ns := strings.TrimSpace(res.Stdout.Text)
	require.True(t, strings.HasPrefix(ns, "net:["), ns)
	return ns
}

// heldByServer reports whether this process holds a descriptor of ns.
func heldByServer(ns string) bool {
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == ns {
			return true
		}
	}
	return false
}

// referenced reports whether any process this one can see is in ns or
// holds a descriptor of it: when none is (and a root test sees them all),
// the kernel has ended it and nothing can enter it.
func referenced(ns string) bool {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + p.Name() + "/ns/net"); err == nil && l == ns {
			return true
		}
		fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name()); err == nil && l == ns {
				return true
			}
		}
	}
	return false
}

// eventually polls cond for up to 5 s.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestSessionNetwork (issue 23): under network deny the commands of one
// session share one loopback-only network namespace, so a server one runs
// on 127.0.0.1 is reached by another while it runs; another session's
// commands are in another namespace and cannot reach it; none reaches the
// host's network; a command runs as the workspace owner with no capability
// and cannot add an interface; once the session ends the server lets the
// namespace go (nothing references it, so nothing can enter it) and a late
// command of it is refused; the runner's Close lets the rest go. A call with
// no session, and --network allow, are as before.
func TestSessionNetwork(t *testing.T) {
	longTest(t)
	pl := fixtures.Perl(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			tracker := session.NewTracker()
			a, b := tracker.Start("a", w.ws), tracker.Start("b", w.ws)
			ctxA, ctxB := session.NewContext(t.Context(), a), session.NewContext(t.Context(), b)
			tryIn := func(ctx context.Context, command string) (exec.Result, error) {
				return w.r.Run(ctx, exec.Request{
					Command: command, Workdir: w.ws, Timeout: time.Minute,
					Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
				})
			}
			runIn := func(ctx context.Context, command string) exec.Result {
				t.Helper()
				res, err := tryIn(ctx, command)
				require.NoError(t, err)
				return res
			}
			host, err := os.Readlink("/proc/self/ns/net")
			require.NoError(t, err)

			nsA := netOf(ctxA, t, w)
			assert.Equal(t, nsA, netOf(ctxA, t, w), "two commands of one session share a namespace")
			nsB := netOf(ctxB, t, w)
			assert.NotEqual(t, nsA, nsB, "two sessions do not")
			own := netOf(t.Context(), t, w)
			assert.NotContains(t, []string{host, nsA, nsB}, own, "a call with no session has a namespace of its own")
			assert.NotEqual(t, host, nsA)

			t.Run("a server of one command is reached by the next, not by another session", func(t *testing.T) {
				const port = 4321
				var wg sync.WaitGroup
				var server exec.Result
				var serverErr error
				wg.Go(func() { server, serverErr = tryIn(ctxA, fixtures.ListenOnce(pl, port)) })
				stranger := runIn(ctxB, fixtures.ConnectTo(pl, "127.0.0.1", port, 30, "from session b"))
				client := runIn(ctxA, fixtures.ConnectTo(pl, "127.0.0.1", port, 300, "from session a"))
				wg.Wait()
				require.NoError(t, serverErr)
				assert.NotEqual(t, 0, stranger.ExitCode, stranger.Stdout.Text)
				assert.Equal(t, 0, client.ExitCode, client.Stderr.Text)
				assert.Equal(t, 0, server.ExitCode, server.Stderr.Text)
				assert.Equal(t, "from session a\n", server.Stdout.Text, server.Stderr.Text)
			})

			t.Run("no capability, the owner's uid, loopback only", func(t *testing.T) {
				res := runIn(ctxA, "id -u; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status; ls /proc/sys/net/ipv4/conf")
				require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
				lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
				require.Len(t, lines, 1+5+3, res.Stdout.Text)
				assert.Equal(t, strconv.Itoa(o.uid), lines[0])
				for _, l := range lines[1:6] {
					assert.Regexp(t, `^Cap[A-Za-z]{3}:\s+0{16}$`, l)
				}
				assert.Equal(t, []string{"all", "default", "lo"}, lines[len(lines)-3:], "the namespace's interfaces")
				if hasCommand("ip") {
					res := runIn(ctxA, "ip link add harness-test0 type dummy; echo $?; ip link set lo down; echo $?")
					assert.NotEqual(t, "0\n0\n", res.Stdout.Text, res.Stderr.Text)
					assert.Contains(t, res.Stderr.Text, "Operation not permitted")
					_, err := net.InterfaceByName("harness-test0")
					assert.Error(t, err, "the host has the interface a command added")
					assert.Equal(t, nsA, netOf(ctxA, t, w))
					res = runIn(ctxA, "cat /sys/class/net/lo/operstate")
					assert.Equal(t, "unknown\n", res.Stdout.Text, "lo is still up")
				}
			})

			t.Run("the host's network is out of reach", func(t *testing.T) {
				addr := hostAddress(t)
				port, accepted := hostListener(t, "tcp4", "0.0.0.0:0")
				for _, h := range []string{addr, "127.0.0.1"} {
					res := runIn(ctxA, fixtures.ConnectTo(pl, h, port, 3, "out"))
					assert.NotEqual(t, 0, res.ExitCode, h)
					assert.Contains(t, res.Stderr.Text, "connect:", h)
				}
				assert.Zero(t, accepted.Load(), "connections the host's listener accepted")
			})

			t.Run("the session's end lets its namespace go", func(t *testing.T) {
				require.True(t, heldByServer(nsA))
				tracker.End(a)
				assert.True(t, eventually(func() bool { return !heldByServer(nsA) }), "the server still holds the ended session's namespace")
				if os.Geteuid() == 0 {
					assert.True(t, eventually(func() bool { return !referenced(nsA) }), "something still references the ended session's namespace")
				}
				_, err := w.r.Run(ctxA, exec.Request{
					Command: "touch late", Workdir: w.ws, Timeout: time.Minute,
					Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
				})
				var ee *exec.Error
				require.True(t, errors.As(err, &ee), "%v", err)
				assert.EqualValues(t, exec.CodeUnavailable, ee.Code)
				assert.Contains(t, ee.Message, "session has ended")
				assert.NoFileExists(t, w.ws+"/late")
				assert.Equal(t, nsB, netOf(ctxB, t, w), "another session keeps its own")
			})

			t.Run("--network allow is the host's network", func(t *testing.T) {
				r, err := execsandbox.New(execsandbox.Config{Network: true}, exec.Config{}, w.pol)
				require.NoError(t, err)
				defer func() { _ = r.Close() }()
				allowed := w
				allowed.r = r
				assert.Equal(t, host, netOf(ctxB, t, allowed))
			})

			require.True(t, heldByServer(nsB))
			require.NoError(t, w.r.Close())
			assert.False(t, heldByServer(nsB), "Close returned with the namespace held")
			_, err = w.r.Run(ctxB, exec.Request{
				Command: "true", Workdir: w.ws, Timeout: time.Minute,
				Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
			})
			require.Error(t, err, "a command after Close")
		})
	}
}

// hostAddress is a non-loopback IPv4 address of this host, or skips.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			return ip.IP.String()
		}
	}
	t.Skip("this host has no non-loopback IPv4 address")
	return ""
}

// TestSessionNetworkNeedsNsenter: where nsenter is not on PATH, or only
// inside a writable root (where a command could have put it), a command of
// a session is refused with the reason and the remedy and nothing runs (it
// never runs with the host's network); so is a call with no session, whose
// namespace of its own holds the proxy's listener (network deny).
func TestSessionNetworkNeedsNsenter(t *testing.T) {
	installed, err := osexec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed")
	}
	realNsenter, err := osexec.LookPath("nsenter")
	if err != nil {
		t.Skip("nsenter is not installed: nothing to hide")
	}
	w := newWorld(t, primaryOwner(), exec.Config{}, nil)
	onlyBwrap, err := os.MkdirTemp("/var/tmp", "harness-path-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(onlyBwrap) })
	require.NoError(t, os.Symlink(installed, filepath.Join(onlyBwrap, "bwrap")))
	planted := filepath.Join(w.cache, "bin")
	require.NoError(t, os.MkdirAll(planted, 0o755))
	require.NoError(t, os.Symlink(realNsenter, filepath.Join(planted, "nsenter")))

	for _, c := range []struct{ name, path string }{
		{"no nsenter on PATH", onlyBwrap},
		{"nsenter only inside a writable root", onlyBwrap + ":" + planted},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PATH", c.path)
			r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, w.pol)
			require.NoError(t, err)
			defer func() { _ = r.Close() }()
			marker := filepath.Join(w.ws, "ran")
			req := exec.Request{
				Command: "/bin/touch " + marker, Workdir: w.ws, Timeout: time.Minute,
				Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
			}
			_, err = r.Run(session.NewContext(t.Context(), session.New("s", w.ws)), req)
			var ee *exec.Error
			require.True(t, errors.As(err, &ee), "want a runner error, got %v", err)
			assert.EqualValues(t, exec.CodeUnavailable, ee.Code)
			assert.Contains(t, ee.Message, "nsenter")
			assert.Contains(t, ee.Message, "util-linux")
			assert.NoFileExists(t, marker)

			// No session: a namespace of its own, whose proxy listener
			// needs nsenter too.
			_, err = r.Run(t.Context(), req)
			require.True(t, errors.As(err, &ee), "want a runner error, got %v", err)
			assert.EqualValues(t, exec.CodeUnavailable, ee.Code)
			assert.Contains(t, ee.Message, "nsenter")
			assert.NoFileExists(t, marker)
		})
	}
}

// heldNets returns the network namespaces this process holds a descriptor
// of ("net:[N]").
func heldNets() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "net:[") {
			out[l] = true
		}
	}
	return out
}

// settledNets returns heldNets once two reads 200 ms apart agree (at
// most 5 s).
func settledNets() map[string]bool {
	last := heldNets()
	for range 25 {
		time.Sleep(200 * time.Millisecond)
		now := heldNets()
		if maps.Equal(now, last) {
			break
		}
		last = now
	}
	return last
}

// newNet waits for a network namespace this process holds that was not
// in before, and returns it ("" when none came within 5 s).
func newNet(before map[string]bool) string {
	var got string
	eventually(func() bool {
		for ns := range heldNets() {
			if !before[ns] {
				got = ns
				return true
			}
		}
		return false
	})
	return got
}

// TestSpareNetworkNamespace (issue 34: the first command is not special):
// the warm-up makes the first session's loopback-only namespace ahead, and
// each session that takes one makes the next; a session's first command
// runs in the one made ahead (not in a namespace made while it waited),
// each spare goes to one session only, and Close lets the spare go too.
func TestSpareNetworkNamespace(t *testing.T) {
	// Owned by the server's user, whose commands run as it from
	// newWorld's first one on (a spare is made for one user). Other tests'
	// runners make theirs first.
	before := settledNets()
	w := newWorld(t, owner{"owned by the server's user", os.Geteuid()}, exec.Config{}, nil)
	tracker := session.NewTracker()
	a, b := tracker.Start("a", w.ws), tracker.Start("b", w.ws)
	t.Cleanup(func() { tracker.End(a); tracker.End(b) })
	// newWorld's first command (session "world") made its namespace, and
	// the spare after it ended.
	before[netOf(session.NewContext(t.Context(), w.sess), t, w)] = true
	spare := newNet(before)
	require.NotEmpty(t, spare, "no namespace was made ahead after a session's first command")
	nsA := netOf(session.NewContext(t.Context(), a), t, w)
	assert.Equal(t, spare, nsA, "the session's first command runs in the namespace made ahead")
	before[nsA] = true
	next := newNet(before)
	require.NotEmpty(t, next, "taking the spare made no other")
	nsB := netOf(session.NewContext(t.Context(), b), t, w)
	assert.Equal(t, next, nsB)
	assert.NotEqual(t, nsA, nsB, "two sessions never share a spare")
	before[nsB] = true
	last := newNet(before)
	require.NotEmpty(t, last)

	w.r.Warm(t.Context())
	assert.Equal(t, last, newNet(before), "the warm-up makes none while one is ready")
	require.NoError(t, w.r.Close())
	assert.False(t, heldByServer(last), "Close returned with the spare held")
}

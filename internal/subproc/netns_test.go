//go:build linux

package subproc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
)

// netNS makes a NetNS for b with the host's nsenter, or skips when nsenter
// or perl (the listener and client of these tests) is missing.
func netNS(t testing.TB, b subproc.Bwrap) *subproc.NetNS {
	t.Helper()
	path, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("nsenter (util-linux) is not installed")
	}
	enter, err := subproc.OpenProgram(path)
	require.NoError(t, err)
	n, err := subproc.NewNetNS(b, enter)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// TestNetNSShared: commands started in one NetNS share its network
// namespace (not the host's): a server one command runs on 127.0.0.1 is
// reached by another command running meanwhile; a command with a namespace
// of its own sees a different one and cannot reach that server; loopback
// is up and nothing else is there.
func TestNetNSShared(t *testing.T) {
	requireLandlock(t)
	pl := fixture.Perl(t)
	b := sandbox(t)
	joined := b
	joined.Net = netNS(t, b)
	ws := t.TempDir()
	try := func(b subproc.Bwrap, command string) (subproc.Outcome, error) {
		return subproc.RunBwrap(t.Context(), b, subproc.Spec{
			Command: command, Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}, Confine: &subproc.Confinement{},
		}, time.Minute, 1<<20, nil, subproc.Watch{})
	}
	run := func(b subproc.Bwrap, command string) (subproc.Outcome, string) {
		out, err := try(b, command)
		require.NoError(t, err)
		require.True(t, out.Status.Started, out.Status.Error)
		return out, out.Stdout.String() + out.Stderr.String()
	}
	host, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)

	_, first := run(joined, "readlink /proc/self/ns/net; cat /sys/class/net/lo/operstate; ls /proc/sys/net/ipv4/conf")
	_, second := run(joined, "readlink /proc/self/ns/net")
	_, own := run(b, "readlink /proc/self/ns/net")
	firstNS := strings.Fields(first)[0]
	assert.Equal(t, firstNS, strings.TrimSpace(second), "two commands of one namespace share it")
	assert.NotEqual(t, host, firstNS, "not the host's")
	assert.NotEqual(t, firstNS, strings.TrimSpace(own), "a command of its own has its own")
	assert.Equal(t, []string{"all", "default", "lo"}, strings.Fields(first)[2:], "loopback only")

	const port = 4321
	var wg sync.WaitGroup
	var server subproc.Outcome
	var serverErr error
	wg.Go(func() { server, serverErr = try(joined, fixture.ListenOnce(pl, port)) })
	stranger, strangerOut := run(b, fixture.ConnectTo(pl, "127.0.0.1", port, 30, "from another namespace"))
	client, clientOut := run(joined, fixture.ConnectTo(pl, "127.0.0.1", port, 300, "from the same namespace"))
	wg.Wait()
	require.NoError(t, serverErr)
	require.True(t, server.Status.Started, server.Status.Error)
	serverOut := server.Stdout.String()
	assert.NotEqual(t, 0, stranger.Status.ExitCode, strangerOut)
	assert.Equal(t, 0, client.Status.ExitCode, clientOut)
	assert.Equal(t, 0, server.Status.ExitCode, serverOut)
	assert.Equal(t, "from the same namespace\n", serverOut)
}

// TestNetNSClose: a closed NetNS is refused (ErrNetNSClosed, nothing runs)
// and this process holds nothing of it any more; a command as another user
// than the one it was made for is refused.
func TestNetNSClose(t *testing.T) {
	requireLandlock(t)
	b := sandbox(t)
	b.Net = netNS(t, b)
	ws := t.TempDir()
	spec := subproc.Spec{Command: "readlink /proc/self/ns/net; touch ran", Dir: ws, Env: []string{}, Confine: &subproc.Confinement{WritableRoots: []string{ws}}}
	out, err := subproc.RunBwrap(t.Context(), b, spec, time.Minute, 1<<20, nil, subproc.Watch{})
	require.NoError(t, err)
	ns := strings.TrimSpace(out.Stdout.String())
	require.True(t, strings.HasPrefix(ns, "net:["), out.Stdout.String()+out.Stderr.String())
	assert.Contains(t, heldNamespaces(t), ns)
	require.NoError(t, os.Remove(filepath.Join(ws, "ran")))

	other := b
	other.Credential = &syscall.Credential{Uid: uint32(os.Geteuid()) + 1, Gid: uint32(os.Getegid()) + 1}
	_, err = subproc.RunBwrap(t.Context(), other, spec, time.Minute, 1<<20, nil, subproc.Watch{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "belongs to uid")
	assert.NoFileExists(t, filepath.Join(ws, "ran"))

	require.NoError(t, b.Net.Close())
	assert.NotContains(t, heldNamespaces(t), ns)
	_, err = subproc.RunBwrap(t.Context(), b, spec, time.Minute, 1<<20, nil, subproc.Watch{})
	require.ErrorIs(t, err, subproc.ErrNetNSClosed)
	assert.NoFileExists(t, filepath.Join(ws, "ran"))
	require.NoError(t, b.Net.Close(), "closing twice is harmless")
}

// heldNamespaces returns what this process's descriptors refer to.
func heldNamespaces(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			out = append(out, l)
		}
	}
	return out
}

// BenchmarkBwrapNetNS measures what a session's namespace changes for one
// command: `true` in the bubblewrap isolation with a network namespace of
// its own (--unshare-net) and joined to a NetNS (nsenter, no
// --unshare-net), interleaved call by call, alternating which goes first,
// reporting the median of each (ms) and of NewNetNS, made and closed once
// per iteration (ms).
func BenchmarkBwrapNetNS(b *testing.B) {
	requireLandlock(b)
	bw := sandbox(b)
	joined := bw
	joined.Net = netNS(b, bw)
	enter, err := exec.LookPath("nsenter")
	require.NoError(b, err)
	enterProg, err := subproc.OpenProgram(enter)
	require.NoError(b, err)
	ws := b.TempDir()
	timed := func(f func()) float64 {
		start := time.Now()
		f()
		return float64(time.Since(start).Microseconds()) / 1000
	}
	run := func(bw subproc.Bwrap) func() {
		return func() {
			out, err := subproc.RunBwrap(b.Context(), bw, subproc.Spec{Command: "true", Dir: ws, Env: []string{}, Confine: &subproc.Confinement{}}, time.Minute, 1<<10, nil, subproc.Watch{})
			if err != nil || !out.Status.Started || out.Status.ExitCode != 0 {
				b.Fatal(err, out.Status.Error)
			}
		}
	}
	var own, shared, made []float64
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			own = append(own, timed(run(bw)))
			shared = append(shared, timed(run(joined)))
		} else {
			shared = append(shared, timed(run(joined)))
			own = append(own, timed(run(bw)))
		}
		made = append(made, timed(func() {
			n, err := subproc.NewNetNS(bw, enterProg)
			if err != nil {
				b.Fatal(err)
			}
			_ = n.Close()
		}))
		i++
	}
	median := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(median(own), "own-ms")
	b.ReportMetric(median(shared), "joined-ms")
	b.ReportMetric(median(made), "newnetns-ms")
}

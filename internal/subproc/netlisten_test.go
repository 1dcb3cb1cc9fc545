package subproc_test

import (
	"bufio"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
)

// TestNetNSListen: the listener Listen returns lives inside the namespace:
// a command joined to it reaches it on 127.0.0.1 and what it sends arrives
// at the server's accept; the server's own loopback does not reach it; a
// credential other than the namespace's, and a closed namespace, are
// refused.
func TestNetNSListen(t *testing.T) {
	requireLandlock(t)
	pl := fixture.Perl(t)
	b := sandbox(t)
	b.Net = netNS(t, b)
	ln, err := b.Net.Listen(b.Stage, nil)
	require.NoError(t, err)
	defer ln.Close() //nolint:errcheck // test
	addr := ln.Addr().(*net.TCPAddr)
	require.Equal(t, "127.0.0.1", addr.IP.String())

	got := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			_ = c.Close()
			got <- line
		}
	}()

	// From the server's namespace: the port is not this listener.
	if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
		_, _ = c.Write([]byte("from the host\n"))
		_ = c.Close()
	}
	out, err := subproc.RunBwrap(t.Context(), b, subproc.Spec{
		Command: fixture.ConnectTo(pl, "127.0.0.1", addr.Port, 30, "from inside"),
		Dir:     t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Confine: &subproc.Confinement{},
	}, time.Minute, 1<<20, nil, subproc.Watch{})
	require.NoError(t, err)
	require.True(t, out.Status.Started, out.Status.Error)
	require.Equal(t, 0, out.Status.ExitCode, out.Stdout.String()+out.Stderr.String())
	select {
	case line := <-got:
		assert.Equal(t, "from inside\n", line, "the only connection accepted is the command's")
	case <-time.After(10 * time.Second):
		t.Fatal("the listener accepted nothing from inside the namespace")
	}
	select {
	case line := <-got:
		t.Fatalf("a second connection reached the listener: %q", line)
	default:
	}

	_, err = b.Net.Listen(b.Stage, &syscall.Credential{Uid: uint32(os.Geteuid()) + 1, Gid: uint32(os.Getegid()) + 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "belongs to uid")

	require.NoError(t, b.Net.Close())
	_, err = b.Net.Listen(b.Stage, nil)
	require.ErrorIs(t, err, subproc.ErrNetNSClosed)
}

// BenchmarkNetNSListen measures what the domain proxy adds to a session's
// namespace: one Listen (nsenter, the listen stage, the descriptor handed
// back and checked), the median in ms.
func BenchmarkNetNSListen(b *testing.B) {
	requireLandlock(b)
	bw := sandbox(b)
	ns := netNS(b, bw)
	var took []float64
	for b.Loop() {
		start := time.Now()
		ln, err := ns.Listen(bw.Stage, nil)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, float64(time.Since(start).Microseconds())/1000)
		_ = ln.Close()
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2], "listen-ms")
}

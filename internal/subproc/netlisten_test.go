package subproc_test

import (
	"bufio"
	"net"
	"net/netip"
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

// TestNetNSListenDirect (issue 36): ListenDirect's listeners live inside
// the namespace on the loopback addresses and ports asked for, ports below
// 1024 too, for an ordinary user's server as for root's: a command joined
// to it reaches each, and cannot itself bind a port below 1024 there (no
// command holds the namespace's capabilities); an address that is not
// IPv4 loopback is refused before anything runs.
func TestNetNSListenDirect(t *testing.T) {
	requireLandlock(t)
	pl := fixture.Perl(t)
	b := sandbox(t)
	b.Net = netNS(t, b)
	want := []netip.AddrPort{netip.MustParseAddrPort("127.77.0.2:443"), netip.MustParseAddrPort("127.77.0.2:22"), netip.MustParseAddrPort("127.77.0.3:8443")}
	lns, err := b.Net.ListenDirect(b.Stage, nil, want)
	require.NoError(t, err)
	require.Len(t, lns, len(want))
	got := make(chan string, 8)
	for i, ln := range lns {
		defer ln.Close() //nolint:errcheck // test
		assert.Equal(t, want[i].String(), ln.Addr().String())
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				line, _ := bufio.NewReader(c).ReadString('\n')
				_ = c.Close()
				got <- ln.Addr().String() + " " + line
			}
		}()
	}
	run := func(command string) subproc.Outcome {
		out, err := subproc.RunBwrap(t.Context(), b, subproc.Spec{
			Command: command, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Confine: &subproc.Confinement{},
		}, time.Minute, 1<<20, nil, subproc.Watch{})
		require.NoError(t, err)
		require.True(t, out.Status.Started, out.Status.Error)
		return out
	}
	for _, a := range want {
		out := run(fixture.ConnectTo(pl, a.Addr().String(), int(a.Port()), 30, "hello"))
		require.Equal(t, 0, out.Status.ExitCode, out.Stdout.String()+out.Stderr.String())
		select {
		case line := <-got:
			assert.Equal(t, a.String()+" hello\n", line)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s accepted nothing from inside the namespace", a)
		}
	}
	out := run(pl + ` -MIO::Socket::INET -e 'IO::Socket::INET->new(LocalAddr => "127.77.0.9", LocalPort => 80, Listen => 1) or die "bind: $!\n"; print "bound\n"'`)
	assert.NotEqual(t, 0, out.Status.ExitCode, "a command bound port 80: %s", out.Stdout.String())
	assert.Contains(t, out.Stderr.String(), "Permission denied")

	_, err = b.Net.ListenDirect(b.Stage, nil, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:443")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an IPv4 loopback address")
	_, err = b.Net.ListenDirect(b.Stage, nil, want[:1])
	require.Error(t, err, "the address is in use")
}

// TestHostsFile (issue 36): Confinement.Hosts is the command's /etc/hosts,
// read-only, so the names in it resolve to its addresses through the C
// library; the host's file is untouched.
func TestHostsFile(t *testing.T) {
	requireLandlock(t)
	if _, err := os.Stat("/etc/hosts"); err != nil {
		t.Skip("the machine has no /etc/hosts to bind over")
	}
	before, err := os.ReadFile("/etc/hosts")
	require.NoError(t, err)
	b := sandbox(t)
	const hosts = "127.77.0.2 allowed.test\n127.0.0.1 localhost\n"
	out, err := subproc.RunBwrap(t.Context(), b, subproc.Spec{
		Command: "getent hosts allowed.test; cat /etc/hosts; echo x >> /etc/hosts || echo refused",
		Dir:     t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Confine: &subproc.Confinement{EtcFiles: []subproc.EtcFile{{Path: "/etc/hosts", Content: hosts}}},
	}, time.Minute, 1<<20, nil, subproc.Watch{})
	require.NoError(t, err)
	require.True(t, out.Status.Started, out.Status.Error)
	assert.Equal(t, "127.77.0.2      allowed.test\n"+hosts+"refused\n", out.Stdout.String(), out.Stderr.String())
	after, err := os.ReadFile("/etc/hosts")
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

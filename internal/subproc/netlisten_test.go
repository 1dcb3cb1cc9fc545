//go:build linux

package subproc_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
)

// listenProxy makes a listener on 127.0.0.1, a port the kernel picks,
// inside b.Net (the domain proxy's).
func listenProxy(t testing.TB, b subproc.Bwrap) (net.Listener, error) {
	t.Helper()
	lns, _, err := b.Net.ListenAll(b.Stage, b.Credential, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, nil)
	if err != nil {
		return nil, err
	}
	return lns[0], nil
}

// TestNetNSListen: a listener ListenAll returns lives inside the
// namespace: a command joined to it reaches it on 127.0.0.1 and what it
// sends arrives at the server's accept; the server's own loopback does not
// reach it; a credential other than the namespace's, and a closed
// namespace, are refused.
func TestNetNSListen(t *testing.T) {
	requireLandlock(t)
	pl := fixture.Perl(t)
	b := sandbox(t)
	b.Net = netNS(t, b)
	ln, err := listenProxy(t, b)
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

	other := b
	other.Credential = &syscall.Credential{Uid: uint32(os.Geteuid()) + 1, Gid: uint32(os.Getegid()) + 1}
	_, err = listenProxy(t, other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "belongs to uid")

	require.NoError(t, b.Net.Close())
	_, err = listenProxy(t, b)
	require.ErrorIs(t, err, subproc.ErrNetNSClosed)
}

// BenchmarkNetNSListen measures what the domain proxy adds to a session's
// namespace: one ListenAll of its listener and name server (nsenter, the
// direct stage, the descriptors handed back, bound and checked), the
// median in ms.
func BenchmarkNetNSListen(b *testing.B) {
	requireLandlock(b)
	bw := sandbox(b)
	ns := netNS(b, bw)
	var took []float64
	for b.Loop() {
		start := time.Now()
		lns, pcs, err := ns.ListenAll(bw.Stage, nil, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, []netip.AddrPort{netip.MustParseAddrPort("127.77.0.1:53")})
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, float64(time.Since(start).Microseconds())/1000)
		_ = lns[0].Close()
		_ = pcs[0].Close()
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2], "listen-ms")
}

// TestNetNSListenDirect (issue 36): ListenDirect's listeners live inside
// the namespace on the loopback addresses and ports asked for, ports below
// 1024 too, for an ordinary user's server as for root's: a command joined
// to it reaches each, and cannot itself bind a port below 1024 there (no
// command holds the namespace's capabilities); another IPv4 unicast
// address is given to the namespace's loopback first; an address that is
// neither is refused before anything runs.
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
	// reaches has a command connect to each of addrs and send a line,
	// which the listener there must get.
	reaches := func(addrs []netip.AddrPort) {
		t.Helper()
		for _, a := range addrs {
			out := run(fixture.ConnectTo(pl, a.Addr().String(), int(a.Port()), 30, "hello"))
			require.Equal(t, 0, out.Status.ExitCode, out.Stdout.String()+out.Stderr.String())
			select {
			case line := <-got:
				assert.Equal(t, a.String()+" hello\n", line)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s accepted nothing from inside the namespace", a)
			}
		}
	}
	reaches(want)
	out := run(pl + ` -MIO::Socket::INET -e 'IO::Socket::INET->new(LocalAddr => "127.77.0.9", LocalPort => 80, Listen => 1) or die "bind: $!\n"; print "bound\n"'`)
	assert.NotEqual(t, 0, out.Status.ExitCode, "a command bound port 80: %s", out.Stdout.String())
	assert.Contains(t, out.Stderr.String(), "Permission denied")

	for _, bad := range []string{"224.0.0.1:443", "0.0.0.0:443", "[::1]:443", "[2001:db8::1]:443"} {
		_, err = b.Net.ListenDirect(b.Stage, nil, []netip.AddrPort{netip.MustParseAddrPort(bad)})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "not an IPv4 unicast address", bad)
	}
	// Another unicast address (an allowed IP literal's): the namespace's
	// loopback is given it, a /32 only, twice for two ports; a command
	// reaches each port and nothing else of its network, and cannot take
	// the address away.
	lit := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:443"), netip.MustParseAddrPort("10.0.0.1:5432")}
	for _, a := range lit {
		one, err := b.Net.ListenDirect(b.Stage, nil, []netip.AddrPort{a})
		require.NoError(t, err, a)
		defer one[0].Close() //nolint:errcheck // test
		go func() {
			c, err := one[0].Accept()
			if err == nil {
				line, _ := bufio.NewReader(c).ReadString('\n')
				_ = c.Close()
				got <- a.String() + " " + line
			}
		}()
	}
	reaches(lit)
	out = run(fixture.ConnectTo(pl, "10.0.0.2", 443, 5, "hello"))
	assert.Contains(t, out.Stdout.String()+out.Stderr.String(), "unreachable", "the address's prefix is its own alone")
	if ip, err := exec.LookPath("ip"); err == nil {
		out = run(ip + " addr del 10.0.0.1/32 dev lo && echo taken away; " + ip + " addr show dev lo")
		assert.NotContains(t, out.Stdout.String(), "taken away")
		assert.Contains(t, out.Stderr.String(), "Operation not permitted")
		assert.Contains(t, out.Stdout.String(), "inet 10.0.0.1/32 scope global lo:0a000001", out.Stderr.String())
	}
	// A port a command holds on every address: the literal's listener
	// cannot be made, and the namespace is not given its address (where
	// the command's own listener would answer for the host).
	holder := t.TempDir()
	holderCtx, stopHolder := context.WithCancel(t.Context())
	held := make(chan string, 1)
	go func() {
		out, err := subproc.RunBwrap(holderCtx, b, subproc.Spec{
			Command: pl + ` -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "0.0.0.0", LocalPort => 9443, Listen => 1) or die "bind: $!\n"; open(F, ">", "held") or die; close(F); sleep 60'`,
			Dir:     holder, Env: []string{"PATH=/usr/bin:/bin"}, Confine: &subproc.Confinement{WritableRoots: []string{holder}},
		}, time.Minute, 1<<20, nil, subproc.Watch{})
		held <- fmt.Sprint(err, out.Status, out.Stdout.String(), out.Stderr.String())
	}()
	defer func() { stopHolder(); t.Log("the holder: ", <-held) }()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(holder, "held"))
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the command never held the port")
	_, err = b.Net.ListenDirect(b.Stage, nil, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.9:9443")})
	require.Error(t, err, "a port a command holds on 0.0.0.0")
	if ip, err := exec.LookPath("ip"); err == nil {
		out = run(ip + " addr show dev lo")
		assert.NotContains(t, out.Stdout.String(), "10.0.0.9")
	}
	_, err = b.Net.ListenDirect(b.Stage, nil, want[:1])
	require.Error(t, err, "the address is in use")

	// A name server's socket in the same run: a command's query reaches
	// it.
	lns2, pcs, err := b.Net.ListenAll(b.Stage, nil, []netip.AddrPort{netip.MustParseAddrPort("127.77.0.4:80")}, []netip.AddrPort{netip.MustParseAddrPort("127.77.0.1:53")})
	require.NoError(t, err)
	defer lns2[0].Close() //nolint:errcheck // test
	defer pcs[0].Close()  //nolint:errcheck // test
	out = run(pl + ` -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => "127.77.0.1:53", Proto => "udp")->send("query\n") or die "send: $!\n"'`)
	require.Equal(t, 0, out.Status.ExitCode, out.Stderr.String())
	_ = pcs[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, _, err := pcs[0].ReadFrom(buf)
	require.NoError(t, err)
	assert.Equal(t, "query\n", string(buf[:n]))
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

package netproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/netproxy"
)

// openTunnel opens a tunnel to allowed.test:port through the proxy at addr
// by CONNECT or SOCKS5.
func openTunnel(t *testing.T, addr string, how via, port int) (net.Conn, *bufio.Reader) {
	t.Helper()
	if how == viaSOCKS {
		c, br, rep := dialSOCKS(t, addr, socksRequest(1, "allowed.test", port))
		require.Equal(t, byte(0), rep)
		return c, br
	}
	c, br := dialConnect(t, addr, "allowed.test:"+strconv.Itoa(port))
	status, body := readConnectReply(t, br)
	require.Equal(t, http.StatusOK, status, body)
	return c, br
}

// echo copies what it reads back until EOF, then says "bye" and closes.
func echo(c net.Conn) {
	_, _ = io.Copy(c, c)
	_, _ = c.Write([]byte("bye"))
	_ = c.Close()
}

// closedWithin reports whether reading br ends (EOF or error, not a
// timeout of ours) within d, and what was read first.
func closedWithin(t *testing.T, c net.Conn, br *bufio.Reader, d time.Duration) (string, bool) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	b, err := io.ReadAll(br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true
}

func TestTunnelsCarryBothWaysAndPassHalfClose(t *testing.T) {
	up := newRawUpstream(t, echo)
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	for _, how := range []via{viaConnect, viaSOCKS} {
		t.Run(string(how), func(t *testing.T) {
			c, br := openTunnel(t, f.addr, how, up.port)
			_, err := c.Write([]byte("ping"))
			require.NoError(t, err)
			require.NoError(t, c.(*net.TCPConn).CloseWrite())
			got, closed := closedWithin(t, c, br, 5*time.Second)
			assert.True(t, closed)
			assert.Equal(t, "pingbye", got, "the echo, then what the upstream wrote after the client's EOF")
		})
	}
}

func TestCloseEndsServeTunnelsAndGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		upstreamEOF := make(chan struct{}, 4)
		up := newRawUpstream(t, func(c net.Conn) {
			_, _ = io.Copy(io.Discard, c)
			upstreamEOF <- struct{}{}
		})
		defer up.close()
		f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
		connect, connectR := openTunnel(t, f.addr, viaConnect, up.port)
		socks, socksR := openTunnel(t, f.addr, viaSOCKS, up.port)
		silent, silentR := dialRaw(t, f.addr)   // said nothing yet
		partial, partialR := dialRaw(t, f.addr) // half a request head
		_, err := partial.Write([]byte("GET http://allowed.test/ HTTP/1.1\r\n"))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return up.n.Load() == 2 }, 5*time.Second, 10*time.Millisecond)

		require.NoError(t, f.p.Close())
		require.NoError(t, f.waitServed(t), "Serve returns nil after Close")
		for name, c := range map[string]struct {
			c  net.Conn
			br *bufio.Reader
		}{"connect": {connect, connectR}, "socks": {socks, socksR}, "silent": {silent, silentR}, "partial": {partial, partialR}} {
			_, closed := closedWithin(t, c.c, c.br, 5*time.Second)
			assert.True(t, closed, "%s connection closed by Close", name)
			_ = c.c.Close()
		}
		for range 2 {
			select {
			case <-upstreamEOF:
			case <-time.After(5 * time.Second):
				t.Fatal("an upstream connection was not closed by Close")
			}
		}

		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		assert.NoError(t, f.p.Serve(ln, "late", nil, nil), "Serve after Close returns at once")
		_, err = ln.Accept()
		assert.ErrorIs(t, err, net.ErrClosed, "Serve after Close closes its listener")
	}()
	// Polled here, not with assert.Eventually, which runs its condition on
	// a goroutine of its own.
	now := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); now > before && time.Now().Before(deadline); now = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	if !assert.LessOrEqual(t, now, before, "goroutines settle after Close") {
		buf := make([]byte, 1<<20)
		t.Logf("%s", buf[:runtime.Stack(buf, true)])
	}
}

func TestServeReturnsWhenItsListenerIsClosed(t *testing.T) {
	up := newRawUpstream(t, echo)
	p, err := netproxy.New(netproxy.Config{Allow: []string{"allowed.test"}, Resolver: &fakeResolver{addrs: testAddrs}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln, "s-1", nil, nil) }()
	c, br := openTunnel(t, ln.Addr().String(), viaConnect, up.port)

	require.NoError(t, ln.Close())
	select {
	case err := <-served:
		assert.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its listener was closed")
	}
	_, closed := closedWithin(t, c, br, 5*time.Second)
	assert.True(t, closed, "the session's tunnel is closed with its Serve")
}

func TestIdleTunnelIsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	// trickle writes one byte every idle/3 for 4 idle periods, then closes.
	trickle := func(c net.Conn) {
		for range 12 {
			if _, err := c.Write([]byte{'.'}); err != nil {
				return
			}
			time.Sleep(idle / 3)
		}
		_ = c.Close()
	}
	cases := []struct {
		name     string
		handle   func(net.Conn)
		want     string
		minAlive time.Duration
		maxAlive time.Duration
	}{
		{"no byte either way", echo, "", idle, 3 * time.Second},
		{"a one-way transfer keeps it open", trickle, "............", 4 * idle, 5 * time.Second},
	}
	for _, tc := range cases {
		for _, how := range []via{viaConnect, viaSOCKS} {
			t.Run(tc.name+"/"+string(how), func(t *testing.T) {
				up := newRawUpstream(t, tc.handle)
				f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs, limits: netproxy.Limits{TunnelIdle: idle}})
				c, br := openTunnel(t, f.addr, how, up.port)
				start := time.Now()
				got, closed := closedWithin(t, c, br, 10*time.Second)
				alive := time.Since(start)
				assert.True(t, closed)
				assert.Equal(t, tc.want, got)
				assert.GreaterOrEqual(t, alive, tc.minAlive-50*time.Millisecond)
				assert.Less(t, alive, tc.maxAlive)
			})
		}
	}
}

func TestSilentClientIsClosedAfterTheHeaderTimeout(t *testing.T) {
	const header = 300 * time.Millisecond
	cases := []struct {
		name string
		send string
	}{
		{"nothing", ""},
		{"part of an HTTP head", "CONNECT allowed.test:443 HTTP/1.1\r\n"},
		{"a SOCKS5 greeting only", "\x05\x01\x00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs, limits: netproxy.Limits{Header: header}})
			c, br := dialRaw(t, f.addr)
			_, err := c.Write([]byte(tc.send))
			require.NoError(t, err)
			start := time.Now()
			_, closed := closedWithin(t, c, br, 5*time.Second)
			assert.True(t, closed)
			assert.GreaterOrEqual(t, time.Since(start), header-50*time.Millisecond)
			assert.Empty(t, f.decisions())
		})
	}
}

func TestConnectionsBeyondTheCapWait(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs, limits: netproxy.Limits{Conns: 2}})
	holders := make([]net.Conn, 2)
	for i := range holders {
		holders[i], _ = openTunnel(t, f.addr, viaConnect, up.port)
	}
	c, br := dialRaw(t, f.addr)
	_, err := fmt.Fprintf(c, "GET http://allowed.test:%d/third HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", up.port)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = br.ReadByte()
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "the third connection is not served while two are held")

	require.NoError(t, holders[0].Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	assert.Equal(t, fmt.Sprintf("upstream served allowed.test:%d/third", up.port), readBody(t, br))
}

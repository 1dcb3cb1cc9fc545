package netproxy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/netproxy"
)

// serveDirect serves a ServeDirect listener of f's proxy for host:port and
// returns its address; onRefuse records into f.
func (f *fixture) serveDirect(t *testing.T, grants netproxy.Grants, host string, port int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- f.p.ServeDirect(ln, "s-1", host, port, grants, func(host string, port int, reason string) {
			f.mu.Lock()
			f.refused = append(f.refused, refusal{host, port, reason})
			f.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, net.ErrClosed, "a closed listener ends ServeDirect")
		case <-time.After(10 * time.Second):
			t.Error("ServeDirect did not return")
		}
	})
	return ln.Addr().String()
}

// TestServeDirect (issue 36): a program that connects to the address
// standing for an allowed name reaches that name's server byte for byte
// (a plain HTTP request, no proxy protocol); one standing for a name not
// allowed on that port is closed at once, the upstream never dialed, and
// the refusal reported with the name and port; every decision is logged
// with via "direct".
func TestServeDirect(t *testing.T) {
	up := newUpstream(t)
	t.Run("allowed", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{allow: []string{fmt.Sprintf("allowed.test:%d", up.port)}, addrs: testAddrs})
		addr := f.serveDirect(t, nil, "allowed.test", up.port)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/pkg")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Contains(t, string(body), "upstream served")
		assert.Contains(t, string(body), "/pkg")
		assert.Equal(t, int64(1), up.accepts())
		d := f.decisions()
		require.Len(t, d, 1)
		assert.Equal(t, "network access allowed", d[0]["msg"])
		assert.Equal(t, "direct", d[0]["via"])
	})
	for name, allow := range map[string][]string{
		"another port": {"allowed.test:1"},
		"not listed":   {"other.test"},
	} {
		t.Run(name, func(t *testing.T) {
			before := up.accepts()
			f := newFixture(t, fixtureOpts{allow: allow, addrs: testAddrs})
			addr := f.serveDirect(t, nil, "allowed.test", up.port)
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
			n, err := c.Read(make([]byte, 1))
			assert.Zero(t, n)
			assert.Error(t, err, "closed without an answer")
			_ = c.Close()
			assert.Equal(t, before, up.accepts(), "the upstream was not dialed")
			require.Len(t, f.refusals(), 1)
			assert.Equal(t, "allowed.test", f.refusals()[0].host)
			assert.Equal(t, up.port, f.refusals()[0].port)
			assert.Contains(t, f.refusals()[0].reason, "not in --allow-domain")
			assert.Empty(t, f.resolver.asked(), "a refused name is not resolved")
		})
	}
}

// oneGrant is a comparable Grants (a runner's gate is a pointer).
type oneGrant struct{ host string }

func (g *oneGrant) Allowed(host string) bool { return host == g.host }

// TestServeDirectSharesTheConnectionLimit: a Serve and the ServeDirect
// calls given one Grants hold the connection limit between them, so a
// command that opens idle connections to many direct listeners holds no
// more than the proxy's own limit; a connection freed lets the next in.
func TestServeDirectSharesTheConnectionLimit(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs, limits: netproxy.Limits{Conns: 2}})
	grants := &oneGrant{"granted.test"}
	var addrs []string
	for range 2 {
		addrs = append(addrs, f.serveDirect(t, grants, "allowed.test", up.port))
	}
	// Each listener alone would take two; together they hold two.
	var held []net.Conn
	for _, a := range addrs {
		c, err := net.Dial("tcp", a)
		require.NoError(t, err)
		held = append(held, c)
	}
	require.Eventually(t, func() bool { return up.accepts() == 2 }, 10*time.Second, 10*time.Millisecond)
	third, err := net.Dial("tcp", addrs[0])
	require.NoError(t, err)
	defer third.Close() //nolint:errcheck // test
	_, err = third.Write([]byte("GET /third HTTP/1.0\r\nHost: allowed.test\r\n\r\n"))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, int64(2), up.accepts(), "a third connection was served past the shared limit")
	_ = held[0].Close()
	_ = third.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, _ := io.ReadAll(third)
	assert.Contains(t, string(body), "upstream served allowed.test/third", "served once a slot was freed")
	for _, c := range held[1:] {
		_ = c.Close()
	}
}

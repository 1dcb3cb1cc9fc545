package netproxy_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-go/harness/services/netproxy"
)

// loopback is where every test socket lives.
var loopback = netip.MustParseAddr("127.0.0.1")

// fakeResolver answers from a table and records every name it was asked.
type fakeResolver struct {
	addrs   map[string][]netip.Addr
	mu      sync.Mutex
	lookups []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.lookups = append(r.lookups, host)
	r.mu.Unlock()
	if a, ok := r.addrs[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lookups...)
}

// grantSet grants the names it holds.
type grantSet map[string]bool

func (g grantSet) Allowed(host string) bool { return g[host] }

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// upstream is an HTTP server on 127.0.0.1 that says which host and path it
// served and counts the connections it accepted.
type upstream struct {
	ln   *countingListener
	port int
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &upstream{ln: &countingListener{Listener: ln}, port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprintf(w, "upstream served %s%s", r.Host, r.URL.Path)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(u.ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return u
}

func (u *upstream) accepts() int64 { return u.ln.n.Load() }

// refusal is one call of onRefuse.
type refusal struct {
	host   string
	port   int
	reason string
}

// fixture is a Proxy serving one listener for session "s-1".
type fixture struct {
	p        *netproxy.Proxy
	addr     string
	logs     *observer.ObservedLogs
	resolver *fakeResolver
	mu       sync.Mutex
	refused  []refusal
	outcomes []string // what Config.Decided was told
	served   chan error
	once     sync.Once
	serveErr error
}

type fixtureOpts struct {
	allow  []string
	addrs  map[string][]netip.Addr
	grants netproxy.Grants
	limits netproxy.Limits
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	f := &fixture{logs: logs, resolver: &fakeResolver{addrs: o.addrs}, served: make(chan error, 1)}
	p, err := netproxy.New(netproxy.Config{Allow: o.allow, Resolver: f.resolver, Decided: func(outcome string) {
		f.mu.Lock()
		f.outcomes = append(f.outcomes, outcome)
		f.mu.Unlock()
	}}, zap.New(core))
	require.NoError(t, err)
	netproxy.SetLimits(p, o.limits)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.p, f.addr = p, ln.Addr().String()
	go func() {
		f.served <- p.Serve(ln, "s-1", o.grants, func(host string, port int, reason string) {
			f.mu.Lock()
			f.refused = append(f.refused, refusal{host, port, reason})
			f.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		require.NoError(t, p.Close())
		require.NoError(t, f.waitServed(t))
		// Config.Decided is told every decision logged; concurrent
		// connections log and tell in either order (TestConcurrentFetchesOfOneSession).
		var logged []string
		for _, d := range f.decisions() {
			logged = append(logged, strings.TrimPrefix(d["msg"].(string), "network access "))
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.ElementsMatch(t, logged, f.outcomes, "the outcomes Decided was told")
	})
	return f
}

// waitServed returns what Serve returned, waiting up to 10s for it.
func (f *fixture) waitServed(t *testing.T) error {
	t.Helper()
	f.once.Do(func() {
		select {
		case f.serveErr = <-f.served:
		case <-time.After(10 * time.Second):
			f.serveErr = errors.New("serve did not return")
		}
	})
	return f.serveErr
}

func (f *fixture) refusals() []refusal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]refusal(nil), f.refused...)
}

// decisions returns the logged decisions with their fields.
func (f *fixture) decisions() []map[string]any {
	var out []map[string]any
	for _, e := range f.logs.All() {
		if e.Message == "network access allowed" || e.Message == "network access refused" || e.Message == "network access failed" {
			m := e.ContextMap()
			m["msg"] = e.Message
			m["level"] = e.Level.String()
			out = append(out, m)
		}
	}
	return out
}

// result is what a client got: an HTTP status (0 for SOCKS), a SOCKS
// reply (0xff when not SOCKS) and the body that reached it.
type result struct {
	status int
	rep    byte
	body   string
}

// via names a way of fetching http://host:port/path through the proxy.
type via string

const (
	viaHTTP    via = "http"
	viaConnect via = "connect"
	viaSOCKS   via = "socks5"
)

func (f *fixture) fetch(t *testing.T, how via, host string, port int, path string) result {
	t.Helper()
	switch how {
	case viaHTTP:
		return httpFetch(t, f.addr, "http://"+net.JoinHostPort(host, strconv.Itoa(port))+path)
	case viaConnect:
		return connectFetch(t, f.addr, net.JoinHostPort(host, strconv.Itoa(port)), path)
	default:
		return socksFetch(t, f.addr, host, port, path)
	}
}

// httpFetch GETs target (absolute URL) through the proxy at addr.
func httpFetch(t *testing.T, addr, target string) result {
	t.Helper()
	proxyURL, err := url.Parse("http://" + addr)
	require.NoError(t, err)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get(target)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return result{status: resp.StatusCode, rep: 0xff, body: string(b)}
}

// connectFetch opens a CONNECT tunnel to hostport through the proxy at
// addr and GETs path over it in plain HTTP.
func connectFetch(t *testing.T, addr, hostport, path string) result {
	t.Helper()
	c, br := dialConnect(t, addr, hostport)
	status, body := readConnectReply(t, br)
	if status != http.StatusOK {
		return result{status: status, rep: 0xff, body: body}
	}
	return result{status: status, rep: 0xff, body: getOver(t, c, br, hostport, path)}
}

// readConnectReply reads the proxy's reply to a CONNECT: its status, and
// its body unless it opened the tunnel.
func readConnectReply(t *testing.T, br *bufio.Reader) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// dialConnect sends CONNECT hostport to the proxy at addr.
func dialConnect(t *testing.T, addr, hostport string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := dialRaw(t, addr)
	_, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	require.NoError(t, err)
	return c, br
}

// getOver GETs path over an open tunnel c (read through br).
func getOver(t *testing.T, c net.Conn, br *bufio.Reader, host, path string) string {
	t.Helper()
	_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host)
	require.NoError(t, err)
	return readBody(t, br)
}

// readBody reads one HTTP response from br and returns its body.
func readBody(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// socksFetch connects to host:port with SOCKS5 through the proxy at addr
// (an IP host as an address, any other as a domain name) and, when
// connected, GETs path.
func socksFetch(t *testing.T, addr, host string, port int, path string) result {
	t.Helper()
	c, br, rep := dialSOCKS(t, addr, socksRequest(1, host, port))
	if rep != 0 {
		return result{rep: rep}
	}
	return result{rep: rep, body: getOver(t, c, br, net.JoinHostPort(host, strconv.Itoa(port)), path)}
}

// socksRequest builds a SOCKS5 request for command cmd to host:port.
func socksRequest(cmd byte, host string, port int) []byte {
	req := []byte{5, cmd, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		req = append(append(req, 1), a.AsSlice()...)
	} else if err == nil {
		req = append(append(req, 4), a.AsSlice()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	return binary.BigEndian.AppendUint16(req, uint16(port))
}

// dialSOCKS negotiates no authentication with the proxy at addr, sends req
// and returns the reply code.
func dialSOCKS(t *testing.T, addr string, req []byte) (net.Conn, *bufio.Reader, byte) {
	t.Helper()
	c, br := dialRaw(t, addr)
	_, err := c.Write([]byte{5, 1, 0})
	require.NoError(t, err)
	var method [2]byte
	_, err = io.ReadFull(br, method[:])
	require.NoError(t, err)
	require.Equal(t, [2]byte{5, 0}, method, "method selection")
	_, err = c.Write(req)
	require.NoError(t, err)
	var head [4]byte
	_, err = io.ReadFull(br, head[:])
	require.NoError(t, err)
	require.Equal(t, byte(5), head[0])
	addrLen := map[byte]int{1: 4, 4: 16}[head[3]]
	_, err = io.ReadFull(br, make([]byte, addrLen+2))
	require.NoError(t, err)
	return c, br, head[1]
}

// dialRaw connects to the proxy at addr.
func dialRaw(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return c, bufio.NewReader(c)
}

// rawUpstream is a TCP server on 127.0.0.1 that runs handle on each
// connection it accepts and counts them; its cleanup closes everything and
// waits for its goroutines.
type rawUpstream struct {
	ln    net.Listener
	port  int
	n     atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newRawUpstream(t *testing.T, handle func(net.Conn)) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &rawUpstream{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.n.Add(1)
			u.mu.Lock()
			u.conns = append(u.conns, c)
			u.mu.Unlock()
			u.wg.Add(1)
			go func() { defer u.wg.Done(); handle(c) }()
		}
	}()
	t.Cleanup(u.close)
	return u
}

func (u *rawUpstream) close() {
	_ = u.ln.Close()
	u.mu.Lock()
	for _, c := range u.conns {
		_ = c.Close()
	}
	u.mu.Unlock()
	u.wg.Wait()
}

package netproxy_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testAddrs is the fixture DNS: every test name lives on 127.0.0.1.
var testAddrs = map[string][]netip.Addr{
	"allowed.test":    {loopback},
	"granted.test":    {loopback},
	"evil.example":    {loopback},
	"api.wild.test":   {loopback},
	"api.github.com":  {loopback},
	"github.com":      {loopback},
	"evilgithub.com":  {loopback},
	"mixed.wild.test": {netip.MustParseAddr("140.82.112.3"), loopback},
}

var allVias = []via{viaHTTP, viaConnect, viaSOCKS}

func TestAllowedHostIsFetched(t *testing.T) {
	cases := []struct {
		name   string
		allow  []string
		grants grantSet
		host   string
		reason string
	}{
		{"name listed exactly reaches loopback", []string{"allowed.test"}, nil, "allowed.test", "listed in --allow-domain"},
		{"listing is case-insensitive with a trailing dot", []string{"Allowed.TEST."}, nil, "ALLOWED.test", "listed in --allow-domain"},
		{"IP literal listed", []string{"127.0.0.1"}, nil, "127.0.0.1", "IP address listed in --allow-domain"},
		{"name granted for the session counts as exact", []string{"other.test"}, grantSet{"granted.test": true}, "granted.test", "granted for the session"},
		{"IP literal granted", nil, grantSet{"127.0.0.1": true}, "127.0.0.1", "IP address granted for the session"},
	}
	for _, tc := range cases {
		for _, how := range allVias {
			t.Run(tc.name+"/"+string(how), func(t *testing.T) {
				up := newUpstream(t)
				f := newFixture(t, fixtureOpts{allow: tc.allow, addrs: testAddrs, grants: tc.grants})
				got := f.fetch(t, how, tc.host, up.port, "/pkg")
				if how == viaSOCKS {
					assert.Equal(t, byte(0), got.rep, "SOCKS5 reply")
				} else {
					assert.Equal(t, http.StatusOK, got.status)
				}
				assert.Contains(t, got.body, "upstream served")
				assert.Contains(t, got.body, "/pkg")
				assert.Equal(t, int64(1), up.accepts())
				assert.Empty(t, f.refusals())
				d := f.decisions()
				require.Len(t, d, 1)
				assert.Equal(t, "network access allowed", d[0]["msg"])
				assert.Equal(t, "info", d[0]["level"])
				assert.Equal(t, "s-1", d[0]["session"])
				assert.Equal(t, string(how), d[0]["via"])
				assert.Equal(t, int64(up.port), d[0]["port"])
				assert.Equal(t, "127.0.0.1", d[0]["addresses"])
				assert.Equal(t, tc.reason, d[0]["reason"])
				var lookups []string
				if _, err := netip.ParseAddr(tc.host); err != nil {
					lookups = []string{strings.ToLower(tc.host)}
				}
				assert.Equal(t, lookups, f.resolver.asked(), "a name is resolved once, an IP literal never: the dial uses the checked address")
			})
		}
	}
}

func TestRefusedHostGets403AndUpstreamNothing(t *testing.T) {
	allow := []string{"allowed.test", "*.github.com", "*.wild.test"}
	listed := "(allowed: allowed.test, *.github.com, *.wild.test)"
	cases := []struct {
		name     string
		host     string
		reason   string
		resolved []string
	}{
		{"name not listed", "evil.example", "not in --allow-domain " + listed, nil},
		{"wildcard does not match its apex", "github.com", "not in --allow-domain " + listed, nil},
		{"wildcard does not match a longer label", "evilgithub.com", "not in --allow-domain " + listed, nil},
		{"IP literal not listed", "127.0.0.1", "an IP address is reachable only when it is listed in --allow-domain " + listed, nil},
		{
			"wildcard name resolving to loopback", "api.github.com",
			"it resolves to 127.0.0.1 (loopback); a loopback, private or other non-public address is reachable only " +
				"through a name listed exactly in --allow-domain, not through the wildcard *.github.com",
			[]string{"api.github.com"},
		},
		{
			"wildcard name with one loopback address among public ones", "mixed.wild.test",
			"it resolves to 127.0.0.1 (loopback); a loopback, private or other non-public address is reachable only " +
				"through a name listed exactly in --allow-domain, not through the wildcard *.wild.test",
			[]string{"mixed.wild.test"},
		},
	}
	for _, tc := range cases {
		for _, how := range allVias {
			t.Run(tc.name+"/"+string(how), func(t *testing.T) {
				up := newUpstream(t)
				f := newFixture(t, fixtureOpts{allow: allow, addrs: testAddrs})
				got := f.fetch(t, how, tc.host, up.port, "/exfil?data=secret")
				if how == viaSOCKS {
					assert.Equal(t, byte(2), got.rep, "SOCKS5 reply: not allowed by ruleset")
				} else {
					assert.Equal(t, http.StatusForbidden, got.status)
					assert.Equal(t, fmt.Sprintf("harness: network access to %s refused: %s\n", tc.host, tc.reason), got.body)
				}
				assert.Equal(t, int64(0), up.accepts(), "the upstream listener received a connection")
				assert.Equal(t, []refusal{{tc.host, up.port, tc.reason}}, f.refusals())
				assert.Equal(t, tc.resolved, f.resolver.asked(), "names resolved")
				d := f.decisions()
				require.Len(t, d, 1)
				assert.Equal(t, "network access refused", d[0]["msg"])
				assert.Equal(t, "info", d[0]["level"])
				assert.Equal(t, "s-1", d[0]["session"])
				assert.Equal(t, tc.host, d[0]["host"])
				assert.Equal(t, int64(up.port), d[0]["port"])
				assert.Equal(t, tc.reason, d[0]["reason"])
			})
		}
	}
}

func TestUnresolvableAllowedHostFailsWithoutRefusal(t *testing.T) {
	for _, how := range allVias {
		t.Run(string(how), func(t *testing.T) {
			f := newFixture(t, fixtureOpts{allow: []string{"*.wild.test"}, addrs: testAddrs})
			got := f.fetch(t, how, "gone.wild.test", 443, "/")
			if how == viaSOCKS {
				assert.Equal(t, byte(4), got.rep, "SOCKS5 reply: host unreachable")
			} else {
				assert.Equal(t, http.StatusBadGateway, got.status)
				assert.Contains(t, got.body, "harness: network access to gone.wild.test failed: cannot resolve it: ")
			}
			assert.Empty(t, f.refusals(), "a resolution failure is not a policy refusal")
			d := f.decisions()
			require.Len(t, d, 1)
			assert.Equal(t, "network access failed", d[0]["msg"])
		})
	}
}

func TestAllowedHostWithNothingListeningIs502(t *testing.T) {
	up := newUpstream(t)
	port := up.port
	require.NoError(t, up.ln.Close())
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	for _, how := range allVias {
		got := f.fetch(t, how, "allowed.test", port, "/")
		if how == viaSOCKS {
			assert.Equal(t, byte(5), got.rep, "SOCKS5 reply: connection refused")
			continue
		}
		assert.Equal(t, http.StatusBadGateway, got.status, string(how))
		assert.Contains(t, got.body, "harness: network access to allowed.test failed: ", string(how))
	}
	assert.Empty(t, f.refusals())
	assert.Len(t, f.logs.FilterMessage("network connection failed").All(), 3)
}

func TestNonProxyRequestsAreRejected(t *testing.T) {
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	resp, err := http.Get("http://" + f.addr + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "origin-form request")
	c, br := dialRaw(t, f.addr)
	_, err = fmt.Fprintf(c, "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	require.NoError(t, err)
	assert.Contains(t, readBody(t, br), "use CONNECT", "absolute-form https request")
	got := connectFetch(t, f.addr, "allowed.test", "/")
	assert.Equal(t, http.StatusBadRequest, got.status, "CONNECT without a port")
	assert.Empty(t, f.decisions())
}

func TestSOCKSProtocolErrors(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	cases := []struct {
		name string
		req  []byte
		rep  byte
	}{
		{"BIND is not supported", socksRequest(2, "allowed.test", up.port), 7},
		{"UDP ASSOCIATE is not supported", socksRequest(3, "allowed.test", up.port), 7},
		{"unknown address type", []byte{5, 1, 0, 9, 0, 0}, 8},
		{"IPv6 literal not listed", socksRequest(1, "::1", up.port), 2},
		{"IP literal as a domain name is judged as the literal", append(append([]byte{5, 1, 0, 3, 9}, "127.0.0.1"...), byte(up.port>>8), byte(up.port)), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, rep := dialSOCKS(t, f.addr, tc.req)
			assert.Equal(t, tc.rep, rep)
		})
	}
	assert.Equal(t, int64(0), up.accepts())
	assert.Equal(t, []refusal{
		{"::1", up.port, "an IP address is reachable only when it is listed in --allow-domain (allowed: allowed.test)"},
		{"127.0.0.1", up.port, "an IP address is reachable only when it is listed in --allow-domain (allowed: allowed.test)"},
	}, f.refusals())
}

func TestSOCKSWithoutNoAuthIsRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	c, br := dialRaw(t, f.addr)
	_, err := c.Write([]byte{5, 1, 2}) // username/password only
	require.NoError(t, err)
	b := make([]byte, 2)
	_, err = br.Read(b)
	require.NoError(t, err)
	assert.Equal(t, []byte{5, 0xff}, b)
	_, err = br.ReadByte()
	assert.Error(t, err, "the connection is closed after no acceptable method")
}

func TestConnectPassesBytesSentWithTheRequest(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	c, br := dialRaw(t, f.addr)
	hostport := "allowed.test:" + strconv.Itoa(up.port)
	_, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /early HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
		hostport, hostport, hostport)
	require.NoError(t, err)
	status, body := readConnectReply(t, br)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "upstream served "+hostport+"/early", readBody(t, br))
}

func TestHTTPSThroughCONNECTIsNotIntercepted(t *testing.T) {
	hosts := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		_, _ = w.Write([]byte("secret-free payload"))
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	proxyURL, err := url.Parse("http://" + f.addr)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	// httptest's certificate names example.com: the client checks the
	// upstream's own certificate, end to end, through the tunnel.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:             http.ProxyURL(proxyURL),
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "example.com", MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
	resp, err := c.Get(fmt.Sprintf("https://allowed.test:%d/x", port))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "secret-free payload", string(b))
	assert.Equal(t, fmt.Sprintf("allowed.test:%d", port), <-hosts)
	d := f.decisions()
	require.Len(t, d, 1)
	assert.Equal(t, "connect", d[0]["via"])
}

// TestCurlThroughTheProxy runs the client a command would: curl honoring
// a proxy URL, for plain HTTP, a CONNECT tunnel and SOCKS5 with the name
// resolved by the proxy.
func TestCurlThroughTheProxy(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	up := newUpstream(t)
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	cases := []struct {
		name string
		args []string
	}{
		{"http proxy", []string{"--proxy", "http://" + f.addr}},
		{"CONNECT tunnel", []string{"--proxy", "http://" + f.addr, "--proxytunnel"}},
		{"socks5h", []string{"--proxy", "socks5h://" + f.addr}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for host, want := range map[string]string{
				"allowed.test": fmt.Sprintf("upstream served allowed.test:%d/c", up.port),
				"evil.example": "",
			} {
				args := append([]string{"--silent", "--show-error", "--noproxy", "", "--max-time", "10"}, tc.args...)
				args = append(args, fmt.Sprintf("http://%s:%d/c", host, up.port))
				cmd := exec.Command(curl, args...)
				cmd.Env = []string{"PATH=/usr/bin:/bin"}
				out, err := cmd.Output()
				if want != "" {
					require.NoError(t, err)
					assert.Equal(t, want, string(out))
					continue
				}
				// A refused host: 403 with the reason for plain HTTP, a failed
				// CONNECT or SOCKS5 reply otherwise; the upstream sees nothing.
				if tc.name == "http proxy" {
					assert.Contains(t, string(out), "harness: network access to evil.example refused: not in --allow-domain")
				} else {
					assert.Error(t, err)
				}
			}
		})
	}
	assert.Equal(t, int64(3), up.accepts(), "one connection per allowed fetch, none for a refused one")
	assert.Len(t, f.refusals(), 3)
}

func TestConcurrentFetchesOfOneSession(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, fixtureOpts{allow: []string{"allowed.test"}, addrs: testAddrs})
	const each = 10
	t.Run("group", func(t *testing.T) {
		for i := range each * len(allVias) {
			how := allVias[i%len(allVias)]
			host := []string{"allowed.test", "evil.example"}[i%2]
			t.Run(fmt.Sprintf("%d-%s-%s", i, how, host), func(t *testing.T) {
				t.Parallel()
				got := f.fetch(t, how, host, up.port, fmt.Sprintf("/%d", i))
				if host == "evil.example" {
					if how == viaSOCKS {
						assert.Equal(t, byte(2), got.rep)
					} else {
						assert.Equal(t, http.StatusForbidden, got.status)
					}
					return
				}
				assert.Equal(t, fmt.Sprintf("upstream served allowed.test:%d/%d", up.port, i), got.body)
			})
		}
	})
	assert.Equal(t, int64(each*len(allVias)/2), up.accepts())
	assert.Len(t, f.refusals(), each*len(allVias)/2)
	assert.Len(t, f.decisions(), each*len(allVias))
}

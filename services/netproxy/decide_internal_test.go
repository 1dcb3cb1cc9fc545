package netproxy

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMatchName(t *testing.T) {
	l, err := parseAllow([]string{"*.github.com", "registry.npmjs.org", "api.github.com.", "*.corp.example"})
	require.NoError(t, err)
	cases := []struct {
		host  string
		entry string
		exact bool
	}{
		{"api.github.com", "api.github.com", true},
		{"codeload.github.com", "*.github.com", false},
		{"a.b.github.com", "*.github.com", false},
		{"github.com", "", false},
		{"evilgithub.com", "", false},
		{"github.com.evil.example", "", false},
		{"registry.npmjs.org", "registry.npmjs.org", true},
		{"npmjs.org", "", false},
		{"x.registry.npmjs.org", "", false},
		{"corp.example", "", false},
		{"git.corp.example", "*.corp.example", false},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			entry, exact := l.matchName(tc.host, 443)
			assert.Equal(t, tc.entry, entry)
			assert.Equal(t, tc.exact, exact)
		})
	}
}

// TestMatchNamePort: an entry with a port admits that port only; one
// without, every port.
func TestMatchNamePort(t *testing.T) {
	l, err := parseAllow([]string{"github.com:22", "*.example.org:443", "10.0.0.5:22", "registry.npmjs.org"})
	require.NoError(t, err)
	cases := []struct {
		host  string
		port  int
		entry string
	}{
		{"github.com", 22, "github.com:22"},
		{"github.com", 443, ""},
		{"a.example.org", 443, "*.example.org:443"},
		{"a.example.org", 80, ""},
		{"registry.npmjs.org", 8080, "registry.npmjs.org"},
	}
	for _, tc := range cases {
		entry, _ := l.matchName(tc.host, tc.port)
		assert.Equal(t, tc.entry, entry, "%s:%d", tc.host, tc.port)
	}
	ip := netip.MustParseAddr("10.0.0.5")
	assert.True(t, l.matchIP(ip, 22))
	assert.False(t, l.matchIP(ip, 443))
}

func TestNonPublic(t *testing.T) {
	cases := []struct {
		addr string
		what string
	}{
		{"8.8.8.8", ""},
		{"140.82.112.3", ""},
		{"2606:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"100.127.255.254", "shared (CGNAT)"},
		{"100.128.0.1", ""},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fd00::1", "unique local (private)"},
		{"fc00::1", "unique local (private)"},
		{"0.0.0.0", "this-network (unspecified)"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved or broadcast"},
		{"192.0.2.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::7f00:1", "NAT64 of loopback"},
		{"64:ff9b::808:808", ""},
		{"2002:a00:1::", "6to4 of private"},
		{"2002:808:808::", ""},
		{"::127.0.0.1", "IPv4-compatible (deprecated)"},
		{"2001::1", "IETF protocol assignment (Teredo and others)"},
		{"2001:db8::1", "documentation"},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			assert.Equal(t, tc.what, nonPublic(netip.MustParseAddr(tc.addr)))
		})
	}
}

// tableResolver answers from a table and counts lookups.
type tableResolver struct {
	addrs map[string][]netip.Addr
	n     int
}

func (r *tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.n++
	if a, ok := r.addrs[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

type grantSet map[string]bool

func (g grantSet) Allowed(host string) bool { return g[host] }

func TestDecide(t *testing.T) {
	public := netip.MustParseAddr("140.82.112.3")
	private := netip.MustParseAddr("10.0.0.7")
	ula := netip.MustParseAddr("fd12::7")
	dns := map[string][]netip.Addr{
		"api.github.com":      {public},
		"internal.github.com": {public, private},
		"v6.github.com":       {ula},
		"intranet.example":    {private},
		"approved.example":    {private},
		"empty.github.com":    {},
	}
	allow := []string{"*.github.com", "intranet.example", "10.0.0.9"}
	cases := []struct {
		name    string
		host    string
		grants  Grants
		outcome outcome
		addrs   []netip.Addr
		lookups int
	}{
		{"wildcard name with public addresses", "api.github.com", nil, allowed, []netip.Addr{public}, 1},
		{"wildcard name with a private address among public ones", "internal.github.com", nil, refused, nil, 1},
		{"wildcard name with a unique-local IPv6 address", "v6.github.com", nil, refused, nil, 1},
		{"exact name with a private address", "intranet.example", nil, allowed, []netip.Addr{private}, 1},
		{"granted name with a private address", "approved.example", grantSet{"approved.example": true}, allowed, []netip.Addr{private}, 1},
		{"wildcard name also granted counts as exact", "internal.github.com", grantSet{"internal.github.com": true}, allowed, []netip.Addr{public, private}, 1},
		{"unlisted name is not resolved", "approved.example", grantSet{"other.example": true}, refused, nil, 0},
		{"listed IP literal is dialed as is", "10.0.0.9", nil, allowed, []netip.Addr{netip.MustParseAddr("10.0.0.9")}, 0},
		{"unlisted public IP literal", "140.82.112.3", nil, refused, nil, 0},
		{"bracketed IPv6 literal", "[::1]", nil, refused, nil, 0},
		{"IPv4-mapped spelling of a listed literal is another literal", "::ffff:10.0.0.9", nil, refused, nil, 0},
		{"name that is not a host name", "bad host", nil, refused, nil, 0},
		{"number that is not an address", "2130706433", nil, refused, nil, 0},
		{"resolution failure", "gone.github.com", nil, failed, nil, 1},
		{"empty answer", "empty.github.com", nil, failed, nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &tableResolver{addrs: dns}
			p, err := New(Config{Allow: allow, Resolver: r}, nil)
			require.NoError(t, err)
			v := p.decide(context.Background(), tc.host, 443, tc.grants)
			assert.Equal(t, tc.outcome, v.outcome, v.reason)
			assert.Equal(t, tc.addrs, v.addrs)
			assert.Equal(t, tc.lookups, r.n, "lookups")
			assert.NotEmpty(t, v.reason)
		})
	}
}

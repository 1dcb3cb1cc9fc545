package netproxy_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/netproxy"
)

func TestNewRefusesBadNames(t *testing.T) {
	cases := []struct {
		name   string
		reason string
	}{
		{"", "empty name"},
		{"   ", "empty name"},
		{".", "empty name"},
		{"exa mple.com", "contains white space"},
		{"https://example.com", "a URL is not a name"},
		{"example.com/path", "a path is not part of a name"},
		{"example.com?q", "a path is not part of a name"},
		{"example.com:0", "the port after example.com must be a number from 1 to 65535"},
		{"example.com:65536", "must be a number from 1 to 65535"},
		{"example.com:", "must be a number from 1 to 65535"},
		{"example.com:+22", "must be a number from 1 to 65535"},
		{"example.com:ssh", "must be a number from 1 to 65535"},
		{"[::1]x", "only a port may follow an IPv6 address in brackets"},
		{"*.com:443", "a wildcard over a top-level domain (*.com)"},
		{"*", `"*" alone would allow every name`},
		{"*.", `"*" alone would allow every name`},
		{"*.com", "a wildcard over a top-level domain (*.com)"},
		{"*.COM.", "a wildcard over a top-level domain (*.com)"},
		{"*.10.0.0.1", "a wildcard does not apply to an IP address"},
		{"*.[::1]", "a wildcard does not apply to an IP address"},
		{"a.*.example.com", `"*" is allowed only as the whole first label`},
		{"*example.com", `"*" is allowed only as the whole first label`},
		{"**.example.com", `"*" is allowed only as the whole first label`},
		{"example..com", "an empty label"},
		{".example.com", "an empty label"},
		{"-bad.example.com", "starts or ends with '-'"},
		{"bücher.example", "not an ASCII name: give its xn-- (punycode) form"},
		{"exa$mple.com", `character '$' is not allowed`},
		{"1.2.3", "the last label is a number"},
		{strings.Repeat("a", 64) + ".com", "a label longer than 63 bytes"},
		{strings.Repeat("abcdefghi.", 26) + "com", "longer than 253 bytes"},
		{"fe80::1%eth0", "an IP address with a zone is not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := netproxy.New(netproxy.Config{Allow: []string{"good.example", tc.name}}, nil)
			require.Error(t, err)
			assert.Nil(t, p)
			var ne *netproxy.NameError
			require.True(t, errors.As(err, &ne), "error is a *NameError: %v", err)
			assert.Equal(t, tc.name, ne.Name)
			assert.Contains(t, ne.Reason, tc.reason)
			assert.Contains(t, err.Error(), "--allow-domain ")
		})
	}
}

func TestAllowedIsNormalized(t *testing.T) {
	p, err := netproxy.New(netproxy.Config{Allow: []string{
		"Registry.NPMJS.org.", "*.GitHub.com", "registry.npmjs.org", "[::1]", "10.0.0.5", "_svc.internal.example", "xn--bcher-kva.example",
		"GitHub.com.:22", "github.com:0022", "[::1]:8080", "10.0.0.5:22", "*.Example.org:443",
	}}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"registry.npmjs.org", "*.github.com", "::1", "10.0.0.5", "_svc.internal.example", "xn--bcher-kva.example",
		"github.com:22", "[::1]:8080", "10.0.0.5:22", "*.example.org:443",
	}, p.Allowed())
	empty, err := netproxy.New(netproxy.Config{}, nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Allowed())
}

// TestDirect (issue 36): the names a runner opens to programs that ignore
// the proxy variables, each on the ports its entries name, or ssh, HTTP and
// HTTPS for an entry without one; wildcards and IP literals are not among
// them.
func TestDirect(t *testing.T) {
	p, err := netproxy.New(netproxy.Config{Allow: []string{
		"registry.npmjs.org", "github.com:22", "github.com:8443", "*.github.com", "10.0.0.5", "10.0.0.5:5432", "192.0.2.7:8080",
		"git.example:443", "git.example", "localhost:3000", "api.localhost", "127.0.0.1:5432", "[::1]:22", "[2001:db8::1]:22",
	}}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{
		"registry.npmjs.org": {22, 80, 443},
		"github.com":         {22, 8443},
		"git.example":        {22, 80, 443},
		"10.0.0.5":           {22, 80, 443, 5432},
		"192.0.2.7":          {8080},
	}, p.Direct())
}

// TestDirectLiteral (issue 36): the IP literals served at their own
// address in the command's namespace.
func TestDirectLiteral(t *testing.T) {
	for a, want := range map[string]bool{
		"10.0.0.5": true, "192.0.2.7": true, "8.8.8.8": true, "169.254.169.254": true,
		"127.0.0.1": false, "127.77.0.2": false, "0.0.0.0": false, "0.1.2.3": false,
		"224.0.0.1": false, "255.255.255.255": false, "::1": false, "2001:db8::1": false, "::ffff:10.0.0.5": false,
	} {
		assert.Equal(t, want, netproxy.DirectLiteral(netip.MustParseAddr(a)), a)
	}
}

// TestAdmit (issue 36): the ports a runner's name server gives a name:
// its exact entries', a grant's DirectPorts beside them, a wildcard's when
// no exact entry names it; a name admitted by nothing, or not a name, gets
// the reason.
func TestAdmit(t *testing.T) {
	p, err := netproxy.New(netproxy.Config{Allow: []string{"github.com:22", "*.github.com", "*.example.org:8443", "10.0.0.5"}}, nil)
	require.NoError(t, err)
	cases := []struct {
		host   string
		grants grantSet
		ports  []int
		reason string
	}{
		{"GitHub.com.", nil, []int{22}, ""},
		{"github.com", grantSet{"github.com": true}, []int{22, 80, 443}, ""},
		{"api.github.com", nil, []int{22, 80, 443}, ""},
		{"a.example.org", nil, []int{8443}, ""},
		{"granted.test", grantSet{"granted.test": true}, []int{22, 80, 443}, ""},
		{"evil.example", nil, nil, "not in --allow-domain"},
		{"10.0.0.5", nil, nil, "not a host name"},
		{"localhost", grantSet{"localhost": true}, nil, "the command's own loopback"},
	}
	for _, tc := range cases {
		ports, _, reason := p.Admit(tc.host, tc.grants)
		assert.Equal(t, tc.ports, ports, tc.host)
		if tc.reason == "" {
			assert.Empty(t, reason, tc.host)
		} else {
			assert.Contains(t, reason, tc.reason, tc.host)
		}
	}
}

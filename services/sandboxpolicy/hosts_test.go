package sandboxpolicy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/netproxy"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

func TestCleanHosts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []string
		want  []string
		error string
	}{
		{name: "names lower-cased, final dot dropped, duplicates once", in: []string{"GitHub.com.", "github.com", "registry.npmjs.org"}, want: []string{"github.com", "registry.npmjs.org"}},
		{name: "an underscore label", in: []string{"_dmarc.example.com"}, want: []string{"_dmarc.example.com"}},
		// An IPv4-mapped spelling stays one: the proxy takes it for another
		// literal than the IPv4 one, so a grant must name what it sees.
		{name: "addresses as netip prints them", in: []string{"[::1]", "::ffff:10.0.0.1", "10.0.0.2"}, want: []string{"::1", "::ffff:10.0.0.1", "10.0.0.2"}},
		{name: "a hexadecimal last label", in: []string{"a.0x7f"}, error: `"a.0x7f" is not a host name`},
		{name: "none", in: nil, error: "name 1 to 10 hosts, got 0"},
		{name: "too many", in: strings.Fields("a b c d e f g h i j k"), error: "name 1 to 10 hosts, got 11"},
		{name: "a wildcard", in: []string{"*.github.com"}, error: `"*.github.com" is not a host name`},
		{name: "a scheme", in: []string{"https://github.com"}, error: "is not a host name"},
		{name: "a port", in: []string{"github.com:443"}, error: "is not a host name"},
		{name: "an empty label", in: []string{"github..com"}, error: "is not a host name"},
		{name: "a hyphen at a label's end", in: []string{"github-.com"}, error: "is not a host name"},
		{name: "a control character, quoted", in: []string{"a\x1b[2Jb"}, error: `"a\x1b[2Jb" is not a host name`},
		{name: "too long", in: []string{strings.Repeat("a.", 127) + "aa"}, error: "is not a host name"},
		{name: "a hexadecimal address spelled as a name", in: []string{"0x7f000001"}, error: `"0x7f000001" is not a host name`},
		{name: "a decimal address spelled as a name", in: []string{"2130706433"}, error: "is not a host name"},
		{name: "a dotted address with a numeric last label that is no address", in: []string{"127.1"}, error: "is not a host name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sandboxpolicy.CleanHosts(tc.in)
			for _, h := range tc.in { // one syntax: --allow-domain takes an exact host as allow_hosts does
				if strings.HasPrefix(h, "*.") || strings.HasPrefix(tc.error, "name 1 to") {
					continue
				}
				if tc.name == "a port" {
					// --allow-domain also takes a host with a port (issue
					// 36: that host on that port only); a grant names hosts.
					_, aerr := netproxy.New(netproxy.Config{Allow: []string{h}}, nil)
					assert.NoError(t, aerr)
					continue
				}
				p, aerr := netproxy.New(netproxy.Config{Allow: []string{h}}, nil)
				assert.Equal(t, tc.error != "", aerr != nil, "--allow-domain %q: %v", h, aerr)
				if aerr == nil {
					assert.NoError(t, p.Close())
				}
			}
			if tc.error != "" {
				require.ErrorContains(t, err, tc.error)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestEscalateHosts: the approver is asked with the hosts and the reason;
// allowed once grants nothing to the session, allowed for the session
// records the hosts (each once, across answers), every refusal is an
// EscalationError with its code and records nothing; without an approver,
// a session, or for another family, nothing is asked.
func TestEscalateHosts(t *testing.T) {
	req := sandbox.ApprovalRequest{Family: sandbox.Commands, Tool: "exec", Hosts: []string{"github.com"}, Justification: "fetch the module", Command: "go mod download"}
	for _, tc := range []struct {
		out        sandbox.Outcome
		err        error
		forSession bool
		code       string
		msg        string
	}{
		{out: sandbox.AllowedOnce},
		{out: sandbox.AllowedForSession, forSession: true},
		{out: sandbox.Rejected, code: string(sandboxpolicy.CodeEscalationRefused), msg: `the user rejected allowing the network hosts "github.com" to this command`},
		{out: sandbox.Cancelled, code: string(sandboxpolicy.CodeEscalationRefused), msg: "was cancelled"},
		{out: sandbox.Unavailable, code: string(sandboxpolicy.CodeEscalationRefused), msg: "no approval channel is available"},
		{out: "maybe", code: string(sandboxpolicy.CodeApprovalFailed), msg: `unknown approval outcome "maybe"`},
		{err: errors.New("timed out"), code: string(sandboxpolicy.CodeApprovalFailed), msg: "approval failed: timed out"},
	} {
		t.Run(string(tc.out)+"/"+errString(tc.err), func(t *testing.T) {
			s := session.New("s", "/w")
			var asked []sandbox.ApprovalRequest
			approver := sandbox.ApproverFunc(func(_ context.Context, r sandbox.ApprovalRequest) (sandbox.Outcome, error) {
				asked = append(asked, r)
				return tc.out, tc.err
			})
			forSession, err := sandboxpolicy.EscalateHosts(t.Context(), approver, s, req)
			require.Len(t, asked, 1)
			assert.Equal(t, "allow network hosts github.com: fetch the module", asked[0].Reason)
			assert.Equal(t, []string{"github.com"}, asked[0].Hosts)
			assert.Equal(t, tc.forSession, forSession)
			if tc.code != "" {
				var ee *sandboxpolicy.EscalationError
				require.ErrorAs(t, err, &ee)
				assert.EqualValues(t, tc.code, ee.Code)
				assert.Contains(t, err.Error(), tc.msg)
				assert.Empty(t, sandboxpolicy.GrantedHosts(s))
				return
			}
			require.NoError(t, err)
			if tc.forSession {
				assert.Equal(t, []string{"github.com"}, sandboxpolicy.GrantedHosts(s))
				more := req
				more.Hosts = []string{"github.com", "proxy.golang.org"}
				_, err = sandboxpolicy.EscalateHosts(t.Context(), approver, s, more)
				require.NoError(t, err)
				assert.Equal(t, []string{"github.com", "proxy.golang.org"}, sandboxpolicy.GrantedHosts(s))
			} else {
				assert.Empty(t, sandboxpolicy.GrantedHosts(s))
			}
		})
	}

	never := sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		t.Fatal("the approver must not be asked")
		return "", nil
	})
	files := req
	files.Family = sandbox.FileTools
	for name, call := range map[string]func() error{
		"no approver": func() error {
			_, err := sandboxpolicy.EscalateHosts(t.Context(), nil, session.New("s", "/w"), req)
			return err
		},
		"no session": func() error { _, err := sandboxpolicy.EscalateHosts(t.Context(), never, nil, req); return err },
		"file tools": func() error {
			_, err := sandboxpolicy.EscalateHosts(t.Context(), never, session.New("s", "/w"), files)
			return err
		},
	} {
		var ee *sandboxpolicy.EscalationError
		require.ErrorAs(t, call(), &ee, name)
	}
	assert.Empty(t, sandboxpolicy.GrantedHosts(nil))
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestPromptNamesHosts: a hosts request's prompt names each host quoted
// (a control character escaped, never sent to the terminal), the command,
// what a session answer covers, and no mode.
func TestPromptNamesHosts(t *testing.T) {
	got := sandboxpolicy.Prompt(sandbox.ApprovalRequest{
		Family: sandbox.Commands, Tool: "exec", Hosts: []string{"github.com", "evil\x1b]0;x\x07.test"},
		Command: "git fetch", Workdir: "/w", Justification: "update\u202e the submodule",
	})
	assert.Equal(t, `The agent asks to run the "exec" tool with the command "git fetch" in "/w". `+
		`It asks to let this command reach the network hosts "github.com", "evil\x1b]0;x\a.test" through harness's proxy `+
		`(HTTP, HTTPS and SOCKS5 to exactly those names; every other name stays refused) and changes nothing else. `+
		`Allowing it for the session lets every later command of this session reach those hosts without asking. `+
		`Its justification: update the submodule`, got)
	assert.NotContains(t, got, "\x1b")
}

// TestPromptSaysLocalHostsAreTheServers checks that a grant of the
// server machine's own network says so (attack review F3): "localhost"
// through the proxy is the host harness runs on, not the sandbox.
func TestPromptSaysLocalHostsAreTheServers(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		local string
	}{
		{[]string{"localhost"}, `"localhost" (localhost)`},
		{[]string{"github.com", "api.localhost", "10.1.2.3", "::1", "8.8.8.8"}, `"api.localhost" (localhost), "10.1.2.3" (private), "::1" (loopback)`},
		{[]string{"100.101.102.103", "169.254.169.254", "fd7a:115c:a1e0::1"}, `"100.101.102.103" (shared (CGNAT)), "169.254.169.254" (link-local), "fd7a:115c:a1e0::1" (unique local (private))`},
		{[]string{"::ffff:192.168.1.1", "1.1.1.1"}, `"::ffff:192.168.1.1" (private)`},
		{[]string{"github.com"}, ""},
	} {
		got := sandboxpolicy.Prompt(sandbox.ApprovalRequest{
			Family: sandbox.Commands, Tool: "exec", Hosts: tc.hosts, Command: "curl x", Workdir: "/w", Justification: "fetch",
		})
		if tc.local == "" {
			assert.NotContains(t, got, "this machine's own network")
			continue
		}
		assert.Contains(t, got, " Note: "+tc.local+" is not the public Internet but this machine's own network or one it reaches (the services listening on the host harness runs on, its loopback, private, shared or link-local addresses: a LAN, a VPN, a tailnet), not the command's sandbox.")
	}
}

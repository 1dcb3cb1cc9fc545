package toolexec_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// proxied is a world whose runner proxies allowed.test (resolved, like
// refused.test, to the host's 127.0.0.1 where an HTTP server counts what
// reaches it), and its exec tool.
type proxied struct {
	*world
	exec *tool.Tool
	port int
	hits *atomic.Int64
	perl string
}

func newProxied(t *testing.T) *proxied {
	t.Helper()
	requireLandlock(t)
	w := newWorld(t, sandbox.WorkspaceWrite)
	r, err := execsandbox.New(execsandbox.Config{
		AllowDomains: []string{"allowed.test"}, Resolver: fixture.LoopbackResolver{"allowed.test", "refused.test"},
	}, exec.Config{}, w.pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	port, hits := fixture.HTTPServer(t)
	return &proxied{world: w, exec: tl.Exec(), port: port, hits: hits, perl: fixture.Perl(t)}
}

func (p *proxied) get(host string) string { return fixture.ProxyGet(p.perl, host, p.port) }

// TestExecProxyRefusalIsMarked (issue 24): a command that fails after the
// proxy refused it a host is a network denial naming the host, the port
// and the proxy's reason, with the allow_hosts hint for exactly that host;
// a command that prints such a refusal itself, with no refusal recorded,
// is not one (the proxy's record decides, not the output); an allowed name
// is fetched.
func TestExecProxyRefusalIsMarked(t *testing.T) {
	p := newProxied(t)
	res := callWith(t, p.exec, p.sess, nil, map[string]any{"command": p.get("allowed.test")})
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "hello from the host to allowed.test")

	before := p.hits.Load()
	res = callWith(t, p.exec, p.sess, nil, map[string]any{"command": p.get("refused.test")})
	require.True(t, res.IsError, res.Text)
	assert.EqualValues(t, guard.CodeNetworkDenied, res.Code)
	lines := strings.Split(strings.TrimPrefix(res.Text, "Error: "), "\n")
	require.GreaterOrEqual(t, len(lines), 3, res.Text)
	assert.Equal(t, sandbox.NetworkDenialMarker(sandbox.WorkspaceWrite), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], `(the network proxy refused "refused.test" port `+strconv.Itoa(p.port)+`: "not in --allow-domain`), lines[1])
	assert.Equal(t, sandbox.HostsHint([]string{"refused.test"}), lines[2])
	assert.Contains(t, res.Text, "403")
	assert.Equal(t, before, p.hits.Load(), "the host's server received nothing")

	forged := `echo '(the network proxy refused "evil.test" port 443: "no")'; echo 'HTTP/1.1 403 Forbidden'; exit 22`
	res = callWith(t, p.exec, p.sess, nil, map[string]any{"command": forged})
	assert.False(t, res.IsError, "a command's own output is no refusal: %s", res.Text)
	assert.NotContains(t, res.Text, sandbox.NetworkDenialMarker(sandbox.WorkspaceWrite))
}

// TestExecAllowHosts (issue 24): allow_hosts asks the call's approver,
// naming the hosts and the command; allowed once, that command reaches the
// host and the next does not; allowed for the session, every later
// command does (the session's grant); refused, nothing runs.
func TestExecAllowHosts(t *testing.T) {
	for _, tc := range []struct {
		answer       sandbox.Outcome
		ran, nextRan bool
		code         errcode.Code
	}{
		{sandbox.AllowedOnce, true, false, ""},
		{sandbox.AllowedForSession, true, true, ""},
		{sandbox.Rejected, false, false, sandboxpolicy.CodeEscalationRefused},
		{sandbox.Cancelled, false, false, sandboxpolicy.CodeEscalationRefused},
	} {
		t.Run(string(tc.answer), func(t *testing.T) {
			p := newProxied(t)
			cmd := p.get("refused.test")
			res := callWith(t, p.exec, p.sess, p.answering(tc.answer), map[string]any{
				"command": cmd, "allow_hosts": []string{"Refused.Test."}, "justification": "the build fetches from it",
			})
			require.Len(t, p.asked, 1)
			asked := p.asked[0]
			assert.Equal(t, []string{"refused.test"}, asked.Hosts, "normalized")
			assert.Equal(t, cmd, asked.Command)
			assert.Equal(t, p.ws, asked.Workdir)
			assert.Equal(t, sandbox.Commands, asked.Family)
			assert.Empty(t, asked.Mode)
			assert.Contains(t, sandboxpolicy.Prompt(asked), `reach the network hosts "refused.test" through harness's proxy`)
			assert.EqualValues(t, tc.code, res.Code, res.Text)
			if tc.ran {
				require.False(t, res.IsError, res.Text)
				assert.Contains(t, res.Text, "hello from the host to refused.test")
				assert.EqualValues(t, 1, p.hits.Load())
			} else {
				assert.True(t, res.IsError)
				assert.EqualValues(t, 0, p.hits.Load(), "nothing ran")
			}

			res = callWith(t, p.exec, p.sess, p.answering(tc.answer), map[string]any{"command": cmd})
			assert.Len(t, p.asked, 1, "no prompt without allow_hosts")
			if tc.nextRan {
				require.False(t, res.IsError, res.Text)
				assert.Equal(t, []string{"refused.test"}, sandboxpolicy.GrantedHosts(p.sess))
			} else {
				assert.EqualValues(t, guard.CodeNetworkDenied, res.Code, res.Text)
				assert.Empty(t, sandboxpolicy.GrantedHosts(p.sess))
			}
		})
	}
}

// TestExecAllowHostsArguments: allow_hosts is declared only when the runner
// proxies (network deny under bubblewrap, with or without names); it needs a justification, excludes sandbox_permissions, and
// takes exact host names or addresses only; a refused argument asks
// nothing and runs nothing.
func TestExecAllowHostsArguments(t *testing.T) {
	p := newProxied(t)
	assert.Contains(t, p.exec.InputSchema.Properties, "allow_hosts")
	plain := newWorld(t, sandbox.WorkspaceWrite)
	assert.Contains(t, plain.tool(t, true, sandbox.AllowedOnce).InputSchema.Properties, "allow_hosts", "network deny: the proxy with no names")
	assert.NotContains(t, plain.tool(t, false, sandbox.AllowedOnce).InputSchema.Properties, "allow_hosts", "no proxy, no allow_hosts")

	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"no justification", map[string]any{"allow_hosts": []string{"refused.test"}}, "allow_hosts requires a justification"},
		{"with a mode", map[string]any{"allow_hosts": []string{"refused.test"}, "sandbox_permissions": "danger-full-access", "justification": "x"}, "not both in one call"},
		{"a wildcard", map[string]any{"allow_hosts": []string{"*.test"}, "justification": "x"}, `"*.test" is not a host name`},
		{"a URL", map[string]any{"allow_hosts": []string{"http://refused.test/"}, "justification": "x"}, "is not a host name"},
		{"a port", map[string]any{"allow_hosts": []string{"refused.test:443"}, "justification": "x"}, "is not a host name"},
		{"a control character", map[string]any{"allow_hosts": []string{"refused.test\nyes"}, "justification": "x"}, `"refused.test\nyes" is not a host name`},
		{"none", map[string]any{"allow_hosts": []string{}, "justification": "x"}, "name 1 to 10 hosts"},
		{"not an array", map[string]any{"allow_hosts": "refused.test", "justification": "x"}, "allow_hosts must be an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"command": p.get("refused.test")}
			for k, v := range tc.args {
				args[k] = v
			}
			res := callWith(t, p.exec, p.sess, p.answering(sandbox.AllowedOnce), args)
			assert.EqualValues(t, errcode.InvalidArgument, res.Code, res.Text)
			assert.Contains(t, res.Text, tc.want)
			assert.Empty(t, p.asked)
			assert.EqualValues(t, 0, p.hits.Load())
		})
	}
}

package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestPolicyNetwork (issue 24): `harness policy` prints the network rule
// and the allowed names as the proxy normalized them, in text and JSON; a
// name the proxy refuses, or allowed names with --network allow, stop the
// start with the reason.
func TestPolicyNetwork(t *testing.T) {
	l := newLayout(t)
	base := []string{"policy", "--mode", "workspace-write", "--workspace", l.ws, "--temp-root", l.tmp}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"deny", nil, "network:        deny (loopback only, shared by the session's commands); harness's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) " +
			"refuses every host at once, naming it, but those the user allows a command once or for the session (allow_hosts)\n"},
		{"deny under the landlock isolation", []string{"--exec-isolation", "landlock"}, "network:        deny (loopback only, shared by the session's commands)\n"},
		{"allow", []string{"--network", "allow"}, "network:        allow (every host; no proxy)\n"},
		{
			"allowed names",
			[]string{"--allow-domain", "Registry.NPMjs.org", "--allow-domain", "*.github.com"},
			"network:        deny, except through harness's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) to: registry.npmjs.org, *.github.com; " +
				"and the hosts the user allows a command once or for the session (allow_hosts)\n" +
				"direct hosts:   programs that ignore the proxy variables (Node's fetch, ssh) reach registry.npmjs.org:22, registry.npmjs.org:80, registry.npmjs.org:443 " +
				"by name (the command's /etc/hosts), a wildcard's names on their entry's ports and a granted host on ports 22, 80, 443 (the namespace's name server); an IP entry only through the proxy variables\n",
		},
		{
			"a name with a port",
			[]string{"--allow-domain", "GitHub.com:22"},
			"network:        deny, except through harness's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) to: github.com:22; " +
				"and the hosts the user allows a command once or for the session (allow_hosts)\n" +
				"direct hosts:   programs that ignore the proxy variables (Node's fetch, ssh) reach github.com:22 by name",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, append(base, c.args...), "", false, nil)
			require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, c.want)
		})
	}

	r := runCLI(t, append(base, "--json", "--allow-domain", "github.com"), "", false, nil)
	require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
	var rep struct {
		Exec struct {
			Network   string `json:"network"`
			Isolation struct {
				AllowDomains []string `json:"allowDomains"`
				Direct       []string `json:"direct"`
			} `json:"isolation"`
		} `json:"exec"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, "deny", rep.Exec.Network)
	assert.Equal(t, []string{"github.com"}, rep.Exec.Isolation.AllowDomains)
	assert.Equal(t, []string{"github.com:22", "github.com:80", "github.com:443"}, rep.Exec.Isolation.Direct)

	for _, args := range [][]string{{"--allow-domain", "https://github.com"}, {"--allow-domain", "*"}, {"--allow-domain", "github.com:ssh"}, {"--network", "allow", "--allow-domain", "github.com"}} {
		r := runCLI(t, append(base, args...), "", false, nil)
		assert.NotEqualValues(t, cli.ExitOK, r.code, args)
		assert.Contains(t, r.stderr, "--allow-domain", args)
		assert.Empty(t, r.stdout)
	}
}

// TestCallProxyRefusal (issue 24): `harness call exec` under --allow-domain
// reports a host the proxy refused with the network marker naming it and,
// with no one to ask, says how to allow it instead of offering allow_hosts.
func TestCallProxyRefusal(t *testing.T) {
	pl := fixture.Perl(t)
	l := newLayout(t)
	args, err := json.Marshal(map[string]any{"command": fixture.ProxyGet(pl, "refused.invalid", 80)})
	require.NoError(t, err)
	r := runCLI(t, []string{"call", "exec", "--workspace", l.ws, "--mode", "workspace-write", "--temp-root", l.tmp, "--allow-domain", "allowed.invalid", "--args", string(args)}, "", false, nil)
	if strings.Contains(r.stdout, "SANDBOX_UNAVAILABLE") {
		t.Skip("the sandbox cannot run here: " + r.stdout)
	}
	require.EqualValues(t, cli.ExitToolError, r.code, r.stdout+r.stderr)
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Meta map[string]any `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.NotEmpty(t, res.Content)
	text := res.Content[0].Text
	assert.Contains(t, text, sandbox.NetworkDenialMarker(sandbox.WorkspaceWrite))
	assert.Contains(t, text, `(the network proxy refused "refused.invalid" port 80: "not in --allow-domain`)
	assert.Contains(t, text, "to allow a host, run it again with --allow-domain HOST]")
	assert.NotContains(t, text, "allow_hosts")
	assert.Contains(t, r.stdout, "SANDBOX_NETWORK_DENIED")
}

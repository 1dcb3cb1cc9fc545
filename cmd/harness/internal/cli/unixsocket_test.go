package cli_test

import (
	"encoding/json"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
)

// TestPolicyListsNamedSockets: harness policy lists the named Unix sockets
// and says how they hold here; a named socket that does not exist is a
// usage error naming the flag, at start.
func TestPolicyListsNamedSockets(t *testing.T) {
	l := newLayout(t)
	sock := filepath.Join(l.outside, "agent.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	r := runCLI(t, []string{"policy", "--unix-socket", filepath.Join(l.outside, "gone.sock")}, "", false, nil)
	assert.EqualValues(t, cli.ExitUsage, r.code)
	assert.Contains(t, r.stderr, "--unix-socket: ")
	assert.Contains(t, r.stderr, "gone.sock")

	base := []string{"policy", "--mode", "workspace-write", "--workspace", l.ws, "--temp-root", l.tmp, "--unix-socket", sock}

	r = runCLI(t, append(base, "--json"), "", false, nil)
	require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
	var rep struct {
		Exec struct {
			UnixSockets     string   `json:"unixSockets"`
			UnixSocketPaths []string `json:"unixSocketPaths"`
			Isolation       struct {
				NamedSockets string `json:"namedSockets"`
				Unavailable  string `json:"unavailable"`
			} `json:"isolation"`
		} `json:"exec"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, "deny", rep.Exec.UnixSockets)
	assert.Equal(t, []string{sock}, rep.Exec.UnixSocketPaths)
	assert.NotEmpty(t, rep.Exec.Isolation.NamedSockets)

	r = runCLI(t, base, "", false, nil)
	require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
	if rep.Exec.Isolation.Unavailable != "" {
		t.Skip("the sandbox cannot run commands here: " + rep.Exec.Isolation.Unavailable)
	}
	how := "masked in the view"
	if subproc.Probe().ResolveUnix {
		how = "kernel-enforced"
	}
	assert.Contains(t, r.stdout, "named Unix sockets (--unix-socket), "+how)
	assert.Contains(t, r.stdout, "\n  "+sock+"\n")
}

// TestCallExecNamedSocket: through the exec tool, a command served with
// --unix-socket exchanges bytes with the named socket and cannot reach the
// one beside it, which accepts nothing.
func TestCallExecNamedSocket(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	perl := fixture.Perl(t)
	l := newLayout(t)
	named := fixture.ListenUnix(t, filepath.Join(l.outside, "named.sock"))
	other := fixture.ListenUnix(t, filepath.Join(l.outside, "other.sock"))
	args, err := json.Marshal(map[string]any{"command": fixture.ConnectUnix(perl, "via-exec", named.Path, other.Path)})
	require.NoError(t, err)
	r := runCLI(t, []string{
		"call", "exec", "--args", string(args), "--mode", "workspace-write", "--workspace", l.ws, "--temp-root", l.tmp,
		"--unix-socket", named.Path,
	}, "", false, nil)
	text := parseResult(t, r.stdout).text()
	if strings.Contains(text, "SANDBOX_UNAVAILABLE") {
		t.Skip("the sandbox cannot run commands here: " + text)
	}
	assert.Contains(t, text, named.Path+" OK pong via-exec")
	assert.Regexp(t, regexp.QuoteMeta(other.Path)+" FAIL (Connection refused|Permission denied)", text)
	n, lines := named.Accepted()
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"via-exec"}, lines)
	n, _ = other.Accepted()
	assert.Zero(t, n, "the socket beside the named one was reached")
}

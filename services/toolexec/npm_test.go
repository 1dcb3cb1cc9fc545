package toolexec_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/toolexec"
)

// TestNPMUnderDenyFailsFast (issue 36): under the default --network deny,
// the real npm asking the registry fails within seconds (it stalled until
// the timeout), marked as a network denial that names the registry's host
// with the allow_hosts hint for it; `npm init -y`, which needs no network,
// writes its package.json.
func TestNPMUnderDenyFailsFast(t *testing.T) {
	requireLandlock(t)
	npm, err := osexec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed (Debian: apt-get install npm)")
	}
	w := newWorld(t, sandbox.WorkspaceWrite)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, w.pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)

	res := callWith(t, tl.Exec(), w.sess, nil, map[string]any{"command": npm + " init -y"})
	require.False(t, res.IsError, res.Text)
	b, err := os.ReadFile(filepath.Join(w.ws, "package.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name": "`+strings.ToLower(filepath.Base(w.ws))+`"`)

	start := time.Now()
	res = callWith(t, tl.Exec(), w.sess, nil, map[string]any{"command": npm + " view is-number version", "timeout_ms": 120000})
	took := time.Since(start)
	assert.Less(t, took, 20*time.Second, "npm under deny took %v: %s", took, res.Text)
	require.True(t, res.IsError, res.Text)
	assert.EqualValues(t, guard.CodeNetworkDenied, res.Code, res.Text)
	assert.Contains(t, res.Text, sandbox.NetworkDenialMarker(sandbox.WorkspaceWrite))
	assert.Contains(t, res.Text, `refused "registry.npmjs.org"`)
	assert.Contains(t, res.Text, sandbox.HostsHint([]string{"registry.npmjs.org"}))
}

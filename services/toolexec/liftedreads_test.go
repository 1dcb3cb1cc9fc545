package toolexec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestCredentialReadLiftsOnlyTheNamedPaths (issue 24, review finding F5):
// approved once for ~/.netrc, `wc -c ~/.netrc<LF>cat $(echo ~/.s)sh/…`
// read the ssh key too (the approval lifted the whole deny-read set), and
// the prompt showed the newline as a space. Now the prompt shows it (\n)
// and only ~/.netrc becomes readable; the key's bytes never come out.
func TestCredentialReadLiftsOnlyTheNamedPaths(t *testing.T) {
	w := newSecretWorld(t, sandbox.WorkspaceWrite)
	netrc := filepath.Join(w.home, ".netrc")
	require.NoError(t, os.WriteFile(netrc, []byte("machine a password NETRCMARK-"+w.marker[8:]+"\n"), 0o600))
	cmd := "wc -c " + netrc + "\ncat $(echo " + w.home + "/.s)sh/id_ed25519; cat " + netrc
	res := call(t, w.tool(t, sandbox.AllowedOnce), w.sess, map[string]any{
		"command": cmd, "sandbox_permissions": "danger-full-access", "justification": "count bytes of netrc",
	})
	require.Len(t, w.asked, 1)
	assert.Equal(t, []string{netrc}, w.asked[0].Reads)
	prompt := sandboxpolicy.Prompt(w.asked[0])
	assert.Contains(t, prompt, `with the command "wc -c `+netrc+`\ncat $(echo `+w.home+`/.s)sh/id_ed25519; cat `+netrc+`"`)
	assert.NotContains(t, shown(res), w.marker, "the ssh key, never named, came out")
	assert.Contains(t, shown(res), "NETRCMARK-"+w.marker[8:], res.Text)
	// On disk both files are as they were.
	b, err := os.ReadFile(w.key)
	require.NoError(t, err)
	assert.Equal(t, w.marker+"\n", string(b))
}

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

// TestApprovedDirectoryReadLiftsItsListingOnly (issue 35): approving a
// command that names ~/.ssh, a directory, made every key beneath it
// readable (`head ~/.ssh/*`) while the prompt named only the directory.
// Now the prompt names it with a trailing slash and says it lifts the
// names of its entries only, and a key the prompt does not list stays
// unreadable: the command lists the directory, and the key's bytes never
// come out. A key named beside it is what the prompt lists as readable.
func TestApprovedDirectoryReadLiftsItsListingOnly(t *testing.T) {
	for _, c := range []struct {
		name    string
		command func(ssh, key string) string
		reads   func(ssh, key string) []string
		key     bool // the key's bytes come out
	}{
		{
			"~/.ssh named", func(ssh, _ string) string { return "ls -A " + ssh + "; head " + ssh + "/*" },
			func(ssh, _ string) []string { return []string{ssh + "/"} }, false,
		},
		{
			"~/.ssh by ~", func(string, string) string { return "ls -A ~/.ssh; head ~/.ssh/*" },
			func(ssh, _ string) []string { return []string{ssh + "/"} }, false,
		},
		{
			"~/.ssh and the key named", func(ssh, key string) string { return "ls -A " + ssh + "; head " + key },
			func(ssh, key string) []string { return []string{ssh + "/", key} }, true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newSecretWorld(t, sandbox.WorkspaceWrite)
			t.Setenv("HOME", w.home)
			ssh := filepath.Dir(w.key)
			res := call(t, w.tool(t, sandbox.AllowedOnce), w.sess, map[string]any{
				"command": c.command(ssh, w.key), "sandbox_permissions": "danger-full-access", "justification": "list the keys",
			})
			require.Len(t, w.asked, 1)
			assert.Equal(t, c.reads(ssh, w.key), w.asked[0].Reads)
			prompt := sandboxpolicy.Prompt(w.asked[0])
			assert.Contains(t, prompt, `the directory "`+ssh+`/": the names of its entries only`)
			if c.key {
				assert.Contains(t, prompt, `the file "`+w.key+`"`)
				assert.Contains(t, shown(res), w.marker, res.Text)
			} else {
				assert.NotContains(t, prompt, `the file "`+w.key+`"`)
				assert.NotContains(t, shown(res), w.marker, "a key the prompt did not list came out")
			}
			assert.Contains(t, shown(res), "id_ed25519\n", "the listing: %s", res.Text)
			b, err := os.ReadFile(w.key)
			require.NoError(t, err)
			assert.Equal(t, w.marker+"\n", string(b))
		})
	}
}

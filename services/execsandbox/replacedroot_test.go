//go:build linux

package execsandbox_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestWorkspaceReplacedBetweenCommands (attack review of issue 34): the host
// replaces the workspace between two commands (removed and made again, or
// its parent moved away and made again: `rm -rf ws && git clone`, a checkout
// swap) with a repository, a .env and a .envrc. The searches kept from the
// earlier commands were of another directory: the next command can neither
// read the .env nor write the hooks, the git config or the .envrc. As root
// for both owners, and as the test's own user.
func TestWorkspaceReplacedBetweenCommands(t *testing.T) {
	longTest(t)
	for _, how := range []string{"the workspace made again", "its parent made again"} {
		for _, o := range owners() {
			t.Run(how+" "+o.name, func(t *testing.T) {
				w := newWorld(t, o, exec.Config{}, nil)
				w.run(t, sandbox.WorkspaceWrite, "true")
				w.run(t, sandbox.WorkspaceWrite, "true")
				if how == "its parent made again" {
					base := filepath.Dir(w.ws)
					require.NoError(t, os.Rename(base, base+".old"))
					t.Cleanup(func() { _ = os.RemoveAll(base + ".old") })
					for _, d := range []string{base, w.ws, w.cache, w.outside} {
						require.NoError(t, os.Mkdir(d, 0o755))
					}
				} else {
					require.NoError(t, os.RemoveAll(w.ws))
					require.NoError(t, os.Mkdir(w.ws, 0o755))
				}
				out, err := osexec.Command("git", "init", "-q", w.ws).CombinedOutput()
				require.NoError(t, err, string(out))
				writeTree(t, w.ws, map[string]string{".env": "API_KEY=hunter2\n", ".envrc": "echo ok\n"})
				if os.Geteuid() == 0 {
					require.NoError(t, chownTree(w.ws, o.uid))
				}
				hooks := filepath.Join(w.ws, ".git/hooks/pre-commit")
				config, err := os.ReadFile(filepath.Join(w.ws, ".git/config"))
				require.NoError(t, err)

				res := w.run(t, sandbox.WorkspaceWrite,
					"cat .env; echo 'touch /tmp/x' > .git/hooks/pre-commit; echo '[core] fsmonitor=x' >> .git/config; echo evil >> .envrc; true")
				assert.NotContains(t, res.Stdout.Text, "hunter2", "the .env was read")
				assert.NoFileExists(t, hooks, "a hook was written")
				after, err := os.ReadFile(filepath.Join(w.ws, ".git/config"))
				require.NoError(t, err)
				assert.Equal(t, string(config), string(after), "the git config was written")
				envrc, err := os.ReadFile(filepath.Join(w.ws, ".envrc"))
				require.NoError(t, err)
				assert.Equal(t, "echo ok\n", string(envrc), "the .envrc was written")
			})
		}
	}
}

//go:build linux

package execsandbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestUnreachableWorkspaceNamesTheDirectory: a workspace the user commands
// run as may not reach (another user's home of mode 0700 on the way, or
// the workspace itself without search permission) is refused naming that
// directory and the cause, not as a path the deny-read set hides, even
// when a denied file lies in that home; nothing is made. As root the
// commands run as the workspace's owner (uid 1000) and the home stays
// root's 0700; as an ordinary user the directory is its own, mode 0600.
func TestUnreachableWorkspaceNamesTheDirectory(t *testing.T) {
	requireBwrapAndLandlock(t)
	root := os.Geteuid() == 0
	cases := []struct {
		name string
		// blocked returns the directory that stops the command's user,
		// given the home and the workspace inside it.
		blocked func(home, ws string) string
	}{
		{"another user's home on the way", func(home, _ string) string { return home }},
		{"the workspace itself", func(_, ws string) string { return ws }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			home := filepath.Join(base, "home")
			ws := filepath.Join(home, "ws")
			key := filepath.Join(home, ".ssh", "id_ed25519")
			require.NoError(t, os.MkdirAll(ws, 0o755))
			require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o700))
			require.NoError(t, os.WriteFile(key, []byte("KEY\n"), 0o600))
			blocked := tc.blocked(home, ws)
			if root {
				for d := base; d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
					require.NoError(t, os.Chmod(d, 0o755))
				}
				require.NoError(t, os.Chmod(home, 0o755))
				require.NoError(t, chownTree(ws, ordinaryUID))
			}
			pol, err := sandboxpolicy.New(sandboxpolicy.Config{
				WorkspaceRoot: ws, TempRoots: []string{}, Homes: []string{home}, DenyRead: []string{key},
			})
			require.NoError(t, err)
			r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
			require.NoError(t, err)
			// Root's 0700 home stops uid 1000; an ordinary user's own
			// directory stops it without the owner's search bit.
			mode := os.FileMode(0o600)
			if root && blocked == home {
				mode = 0o700
			}
			require.NoError(t, os.Chmod(blocked, mode))
			t.Cleanup(func() { _ = os.Chmod(blocked, 0o755) })
			for _, m := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
				_, err := r.Run(t.Context(), exec.Request{Command: "echo made > made.txt", Workdir: ws, Timeout: time.Minute, Policy: carried(pol, m, ws)})
				var ee *exec.Error
				require.True(t, errors.As(err, &ee), "%s: %v", m, err)
				assert.Equal(t, exec.CodeInvalidRequest, ee.Code)
				assert.Contains(t, ee.Message, "it may not search "+blocked+" (owner uid ", m)
				assert.Contains(t, ee.Message, fmt.Sprintf("mode %04o)", mode), m)
				assert.NotContains(t, ee.Message, "deny-read", m)
			}
			require.NoError(t, os.Chmod(blocked, 0o755))
			assert.NoFileExists(t, filepath.Join(ws, "made.txt"))
		})
	}
}

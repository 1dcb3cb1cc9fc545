package compose_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
)

// TestLinkChainAcrossFamilies (the second attack review of issue 34): with
// `~/.ssh/id_chain -> ~/dotfiles/current -> a/ssh2/key` and the workspace
// ~/dotfiles, a session whose first call moves `current` away (the move
// tool) does not free the key for its commands, and one whose first
// command moves it does not free it for the read tool, now or after the
// fence's snapshot is taken again: the runner and the fence share what the
// links led to, remembered when the server started.
func TestLinkChainAcrossFamilies(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	const secret = "CHAIN-KEY-7f3a-MARKER"
	for _, first := range []string{"move", "exec"} {
		t.Run(first, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			fixture.Build(t, base, "h/.ssh/", "h/dotfiles/a/ssh2/key: "+secret+"\n", "temp/")
			home, ws := filepath.Join(base, "h"), filepath.Join(base, "h", "dotfiles")
			require.NoError(t, os.Chmod(filepath.Join(home, ".ssh"), 0o700))
			require.NoError(t, os.Symlink("a/ssh2/key", filepath.Join(ws, "current")))
			require.NoError(t, os.Symlink(filepath.Join(ws, "current"), filepath.Join(home, ".ssh", "id_chain")))
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", "")
			run := serveAt(t, ws, filepath.Join(base, "temp"))
			key := filepath.Join(ws, "a/ssh2/key")
			if first == "move" {
				text := run("move", map[string]any{"source": filepath.Join(ws, "current"), "destination": filepath.Join(ws, "cur2")})
				require.Contains(t, text, "Moved", text)
			} else {
				text := run("exec", map[string]any{"command": "mv current cur2 && cat a/ssh2/key; echo done"})
				assert.NotContains(t, text, secret, text)
			}
			text := run("exec", map[string]any{"command": "cat a/ssh2/key; echo done"})
			assert.NotContains(t, text, secret, "a command read the key")
			text = run("read", map[string]any{"file_path": key})
			assert.NotContains(t, text, secret, "the read tool read the key")
			time.Sleep(2100 * time.Millisecond) // the fence's snapshot is taken again
			text = run("read", map[string]any{"file_path": key})
			assert.NotContains(t, text, secret, "the read tool read the key after the snapshot")
			text = run("exec", map[string]any{"command": "cat a/ssh2/key; echo done"})
			assert.NotContains(t, text, secret, "a command read the key later")
		})
	}
}

//go:build linux

package compose_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolchaincache"
)

// TestRefusedCacheWriteNamesTheSwitch (issue 36): with --toolchain-caches
// off, a command's write into npm's cache (beneath the commands' HOME, as
// npm makes it) is refused by the real runner, and the result says it is
// npm's cache and names the switch, not only a wider mode; the cache is
// left as it was.
func TestRefusedCacheWriteNamesTheSwitch(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws := filepath.Join(base, "ws")
	for _, d := range []string{ws, filepath.Join(base, "temp")} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Exec: "sandbox", Mode: "workspace-write", Workspace: ws,
		TempRoots: []string{filepath.Join(base, "temp")}, OneShot: true, LogLevel: "error", LogFormat: "json",
	})
	defer app.RequireStop()
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	var npm string
	for _, c := range toolchaincache.Candidates([]string{"HOME=" + home}) {
		if c.Tool == "npm" {
			npm = c.Path
		}
	}
	require.NotEmpty(t, npm)
	made := filepath.Join(npm, "_cacache", "harness-test-"+filepath.Base(base))
	r := call(t, session.New("s", ws), tools["exec"], map[string]any{"command": `mkdir -p "$HOME/.npm/_cacache/` + filepath.Base(made) + `"`})
	require.True(t, r.IsError, r.Text)
	assert.Contains(t, r.Text, "[sandbox: file access denied under workspace-write mode]")
	assert.Contains(t, r.Text, "it is npm's cache: the server's --toolchain-caches makes the toolchains' existing caches writable)")
	assert.NoDirExists(t, made)
}

//go:build linux

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeDefaultAuditLog: the served binary opens its audit log in the state directory by
// default (0700 directory, 0600 file), and refuses at start a log inside
// the workspace, leaving nothing there.
func TestServeDefaultAuditLog(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	_, err = oneShot(t, ws, []string{"--workspace", ws, "--temp-root", ws}, wireInit(`{}`), wireInitialized)
	require.NoError(t, err)
	log := filepath.Join(os.Getenv("XDG_STATE_HOME"), "harness", "audit.jsonl")
	fi, err := os.Stat(log)
	require.NoError(t, err, "the default log is made at start")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(log))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	inside := filepath.Join(ws, "audit.jsonl")
	bin, err := buildOnce()
	require.NoError(t, err)
	cmd := exec.Command(bin, "serve", "--workspace", ws, "--temp-root", ws, "--audit-log", inside)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HARNESS_") })
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "harness: --audit-log: "+inside+" is inside "+ws+", which calls may write")
	assert.NoFileExists(t, inside)
}

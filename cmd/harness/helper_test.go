//go:build linux

package main_test

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeRunsTheEmbeddedHelper: the binary make build makes (the tests'
// build, scripts/build-harness.sh) runs each command through its small
// embedded helper (internal/helperbin): after a command, the server holds
// the helper's sealed copy, a memory file of a few megabytes whose SHA-256
// is the one the build stamped, not a copy of the whole binary (tens of
// megabytes), and the command ran.
func TestServeRunsTheEmbeddedHelper(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: the commands run confined")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	binInfo, err := os.Stat(bin)
	require.NoError(t, err)
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, cmd := serveWithoutElicitation(ctx, t, bin, "", "--workspace", ws, "--mode", "workspace-write")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "echo ran > out.txt"}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	got, err := os.ReadFile(filepath.Join(ws, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "ran\n", string(got))

	fds := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "fd")
	entries, err := os.ReadDir(fds)
	require.NoError(t, err)
	var sealed [][]byte
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(fds, e.Name()))
		if err != nil || !strings.HasPrefix(link, "/memfd:harness") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(fds, e.Name()))
		require.NoError(t, err)
		sealed = append(sealed, b)
	}
	require.NotEmpty(t, sealed, "the server holds no sealed helper")
	info, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	var stamped string
	for _, s := range info.Settings {
		if s.Key == "-ldflags" {
			_, stamped, _ = strings.Cut(s.Value, "helperbin.sum=")
			stamped, _, _ = strings.Cut(stamped, " ")
		}
	}
	require.NotEmpty(t, stamped, "the binary carries no stamped helper")
	policy, err := exec.Command(bin, "policy", "--workspace", ws, "--mode", "workspace-write").Output()
	require.NoError(t, err)
	assert.Contains(t, string(policy), "\ncommand helper: the command helper this binary embeds (", "harness policy names the embedded helper")
	for _, b := range sealed {
		assert.Less(t, int64(len(b)), binInfo.Size()/4, "a sealed program of %d bytes: a copy of the %d-byte binary, not the embedded helper", len(b), binInfo.Size())
		sum := sha256.Sum256(b)
		assert.Equal(t, stamped, hex.EncodeToString(sum[:]), "the sealed program is not the stamped helper")
	}
}

// serveWithoutElicitation starts `bin serve` with args and connects a
// go-sdk client that declares no elicitation, speaking protocol ("": the
// newest); the session is closed when the test ends. It returns the
// session and the server's command (its process, for its descriptors).
func serveWithoutElicitation(ctx context.Context, t *testing.T, bin, protocol string, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--log-level", "warn"}, args...)...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "no-elicitation", Version: "v0"}, nil) // no elicitation handler: none declared
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd
}

//go:build linux

package main_test

import (
	"context"
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
// the helper's sealed copy, a memory file of a few megabytes, not a copy
// of the whole binary (tens of megabytes), and the command ran.
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
	cmd := exec.Command(bin, "serve", "--log-level", "warn", "--workspace", ws, "--mode", "workspace-write")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "echo ran > out.txt"}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	got, err := os.ReadFile(filepath.Join(ws, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "ran\n", string(got))

	fds := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "fd")
	entries, err := os.ReadDir(fds)
	require.NoError(t, err)
	var sizes []int64
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(fds, e.Name()))
		if err != nil || !strings.HasPrefix(link, "/memfd:harness") {
			continue
		}
		fi, err := os.Stat(filepath.Join(fds, e.Name()))
		require.NoError(t, err)
		sizes = append(sizes, fi.Size())
	}
	require.NotEmpty(t, sizes, "the server holds no sealed helper")
	for _, s := range sizes {
		assert.Less(t, s, binInfo.Size()/4, "a sealed program of %d bytes: a copy of the %d-byte binary, not the embedded helper", s, binInfo.Size())
	}
}

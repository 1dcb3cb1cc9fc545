//go:build linux

package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
)

// TestKilledServerLeavesNoTrace (issue 34, a crash leaves nothing): a
// server killed with SIGKILL while its command runs left the command's
// placeholders (`.git`, `.mcp.json`, `.vscode`, ... about 50) in the
// workspace until a later server of the same workspace ran a command
// there. Now the command ends with the server and the workspace holds
// exactly what it held before, the user's files unchanged.
func TestKilledServerLeavesNoTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: the commands run confined")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws/main.go: package main\n", "ws/.envrc: export A=1\n", "tmp/")
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmp")
	before := names(t, ws)

	// A command no other test runs, to find it in /proc.
	arg := fmt.Sprintf("600.%d", os.Getpid())
	cmd := exec.Command(bin, "serve", "--workspace", ws, "--mode", "workspace-write", "--temp-root", tmp, "--log-level", "warn")
	// stdin stays open: the server is killed while its session lives.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer func() { _ = r.Close(); _ = w.Close() }()
	cmd.Stdin = r
	_, err = w.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"k","version":"v0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"command":"sleep ` + arg + `","background":true}}}
`)
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { return processOf("sleep\x00"+arg+"\x00") > 0 }, 60*time.Second, 10*time.Millisecond, "the command never started")
	during := names(t, ws)
	assert.Contains(t, during, ".git", "the command's placeholders, while it runs (else this test shows nothing)")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		return processOf("sleep\x00"+arg+"\x00") == 0 && assert.ObjectsAreEqual(before, names(t, ws))
	}, 30*time.Second, 20*time.Millisecond, "after the kill: the command (pid %d) and what the workspace holds: %v", processOf("sleep\x00"+arg+"\x00"), names(t, ws))
	b, err := os.ReadFile(filepath.Join(ws, ".envrc"))
	require.NoError(t, err)
	assert.Equal(t, "export A=1\n", string(b))
}

// names returns the names in dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// processOf returns the pid of a process whose command line is cmdline
// (its arguments each ended by a NUL), or 0.
func processOf(cmdline string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Equal(b, []byte(cmdline)) {
			return pid
		}
	}
	return 0
}

//go:build linux

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
)

// TestServeSessionTemp (issue 34, a temp that is the session's own): each
// session gets a new 0700 directory in the first temp root, the same path
// for its commands (their TMPDIR) and its file tools, writable by both;
// the temp root itself, with what others keep there, is neither; two
// sessions get two; the directory goes when the session ends. With
// --shared-temp the temp root itself is writable, as before.
func TestServeSessionTemp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: the commands run confined")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws/", "tmp/other-users-file: theirs\n")
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmp")

	sessionTemp := func(t *testing.T, args ...string) (string, func()) {
		cs, _ := connect(t, "", nil, nil, append([]string{"--workspace", ws, "--mode", "workspace-write", "--temp-root", tmp}, args...)...)
		res := callTool(t, cs, "exec", map[string]any{"command": `printf %s "$TMPDIR"`})
		require.False(t, res.IsError, text(res))
		stdout, _ := res.StructuredContent.(map[string]any)["stdout"].(string)
		return stdout, func() { _ = cs.Close() }
	}

	one, closeOne := sessionTemp(t)
	two, closeTwo := sessionTemp(t)
	assert.NotEqual(t, one, two, "each session its own")
	for _, dir := range []string{one, two} {
		assert.Equal(t, tmp, filepath.Dir(dir))
		assert.True(t, strings.HasPrefix(filepath.Base(dir), "harness-session-"), dir)
		st, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	}

	cs, _ := connect(t, "", nil, nil, "--workspace", ws, "--mode", "workspace-write", "--temp-root", tmp)
	res := callTool(t, cs, "exec", map[string]any{"command": `printf %s "$TMPDIR" > "$TMPDIR/by-command" && printf %s "$TMPDIR"`})
	require.False(t, res.IsError, text(res))
	own, _ := res.StructuredContent.(map[string]any)["stdout"].(string)
	require.NotEmpty(t, own)
	// The file tools write and read the same path.
	res = callTool(t, cs, "write", map[string]any{"file_path": filepath.Join(own, "by-tool"), "content": "tool"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, own, readFile(t, filepath.Join(own, "by-command")))
	assert.Equal(t, "tool", readFile(t, filepath.Join(own, "by-tool")))
	res = callTool(t, cs, "exec", map[string]any{"command": `cat "$TMPDIR/by-tool"`})
	assert.Contains(t, text(res), "tool")

	// The temp root itself: neither family writes there.
	res = callTool(t, cs, "exec", map[string]any{"command": "echo x > " + filepath.Join(tmp, "by-command") + "; echo y >> " + filepath.Join(tmp, "other-users-file")})
	assert.Equal(t, "FS_SANDBOX_DENIED", code(res), text(res))
	res = callTool(t, cs, "write", map[string]any{"file_path": filepath.Join(tmp, "by-tool"), "content": "x"})
	assert.Equal(t, "FS_SANDBOX_DENIED", code(res), text(res))
	assert.NoFileExists(t, filepath.Join(tmp, "by-command"))
	assert.NoFileExists(t, filepath.Join(tmp, "by-tool"))
	assert.Equal(t, "theirs\n", readFile(t, filepath.Join(tmp, "other-users-file")))

	// A session's end removes its temp area.
	closeOne()
	closeTwo()
	require.NoError(t, cs.Close())
	for _, dir := range []string{one, two, own} {
		assert.Eventually(t, func() bool { _, err := os.Lstat(dir); return os.IsNotExist(err) }, 10*time.Second, 20*time.Millisecond, "%s removed", dir)
	}
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only what was there")
	sessionTempOfCall := callTemp(t, ws, tmp)
	assert.NoDirExists(t, sessionTempOfCall, "harness call's temp area goes with the call")

	// A server killed mid-session leaves its temp area; the next one to
	// start removes it, and leaves a live session's alone.
	live, closeLive := sessionTemp(t)
	defer closeLive()
	killed := startKilled(t, ws, tmp, live)
	require.DirExists(t, killed)
	next, closeNext := sessionTemp(t)
	defer closeNext()
	assert.NoDirExists(t, killed, "an orphan: removed at the next start")
	assert.DirExists(t, live, "held by a live server")
	assert.DirExists(t, next)

	// --shared-temp: the temp root itself, shared.
	shared, closeShared := sessionTemp(t, "--shared-temp")
	defer closeShared()
	assert.NotEqual(t, tmp, filepath.Dir(shared), "no area of its own under --shared-temp")
	cs, _ = connect(t, "", nil, nil, "--workspace", ws, "--mode", "workspace-write", "--temp-root", tmp, "--shared-temp")
	res = callTool(t, cs, "exec", map[string]any{"command": "echo x > " + filepath.Join(tmp, "shared")})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "x\n", readFile(t, filepath.Join(tmp, "shared")))
}

// startKilled starts `harness serve` on ws with temp root tmp, has one
// command mark its temp area (running) and sleep, kills the server with
// SIGKILL while that command runs and returns the temp area it left (the
// first one not among except).
func startKilled(t *testing.T, ws, tmp string, except ...string) string {
	t.Helper()
	bin, err := buildOnce()
	require.NoError(t, err)
	cmd := exec.Command(bin, "serve", "--workspace", ws, "--mode", "workspace-write", "--temp-root", tmp, "--log-level", "warn")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"k","version":"v0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"command":"touch \"$TMPDIR/running\"; sleep 60"}}}
`)
	var out strings.Builder
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	var dir string
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir(tmp)
		for _, e := range entries {
			// Killed while its command runs (the command made its
			// marker), not while the command's sandbox is being made.
			p := filepath.Join(tmp, e.Name())
			if _, err := os.Lstat(filepath.Join(p, "running")); err == nil && strings.HasPrefix(e.Name(), "harness-session-") && !slices.Contains(except, p) {
				dir = p
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return dir
}

// callTemp runs `harness call exec` printing its TMPDIR and returns it.
func callTemp(t *testing.T, ws, tmp string) string {
	t.Helper()
	bin, err := buildOnce()
	require.NoError(t, err)
	out, err := exec.Command(bin, "call", "exec", "--arg", `command=printf %s "$TMPDIR"`, "--workspace", ws, "--mode", "workspace-write", "--temp-root", tmp).Output()
	require.NoError(t, err)
	prefix := filepath.Join(tmp, "harness-session-")
	_, rest, found := strings.Cut(string(out), prefix)
	require.True(t, found, "the command's TMPDIR is the call's own: %s", out)
	end := strings.IndexAny(rest, "\"\n ")
	require.Positive(t, end, string(out))
	return prefix + rest[:end]
}

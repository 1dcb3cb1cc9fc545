//go:build linux

package main_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestServeExecutableInWorkspace (issue 35, the attack review's input): a
// checkout of harness used as the workspace, its bin/harness the binary
// the client starts: a command cannot replace it, so the client's next
// start runs harness again; started through a symlink inside the
// workspace (by its path, or by a bare name found on PATH), the server
// does not start under read-only or workspace-write and says why (the
// code, the path, the link, the remedy); under danger-full-access it does.
func TestServeExecutableInWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	built, err := buildOnce()
	require.NoError(t, err)
	w := newE2EWorld(t)
	exe := filepath.Join(w.ws, "bin/harness")
	require.NoError(t, os.MkdirAll(filepath.Dir(exe), 0o755))
	want, err := os.ReadFile(built)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, want, 0o755))

	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cmd := exec.Command(exe, "serve", "--log-level", "warn", "--mode", "workspace-write", "--workspace", w.ws, "--temp-root", w.ws)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	for _, c := range []string{"cp /bin/true bin/harness", "mv bin bin2 && mkdir bin && cp /bin/true bin/harness", "rm -f bin/harness"} {
		res := callTool(t, cs, "exec", map[string]any{"command": c})
		assert.NotContains(t, text(res), "exit code 0", c)
	}
	res := callTool(t, cs, "write", map[string]any{"file_path": exe, "content": "#!/bin/sh\n"})
	assert.True(t, res.IsError, text(res))
	require.NoError(t, cs.Close())
	got, err := os.ReadFile(exe)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "bin/harness changed on disk")

	// Started through a symlink in the workspace: by its path, and by a
	// bare name found on a PATH that leads there.
	link := filepath.Join(w.ws, "links/harness")
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(built, link))
	for _, bare := range []bool{false, true} {
		for _, mode := range []string{"read-only", "workspace-write"} {
			var stderr bytes.Buffer
			serve := exec.Command(link, "serve", "--mode", mode, "--workspace", w.ws, "--temp-root", w.ws)
			if bare {
				serve.Args[0] = "harness"
				serve.Env = append(os.Environ(), "PATH="+filepath.Dir(link)+":"+os.Getenv("PATH"))
			}
			serve.Stdin, serve.Stdout, serve.Stderr = bytes.NewReader(nil), io.Discard, &stderr
			err = serve.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, stderr.String())
			assert.Equal(t, 2, ee.ExitCode())
			for _, s := range []string{"EXECUTABLE_EXPOSED", "harness was started as " + link, "the symlink " + link + " inside the writable root " + w.ws, "Remedy: start harness by its real path (" + built + ")"} {
				assert.Contains(t, stderr.String(), s, "bare name %v", bare)
			}
		}
	}
	// Under danger-full-access nothing is confined to keep it from: it
	// serves (tools lists and exits).
	out, err := exec.Command(link, "tools", "--mode", "danger-full-access", "--workspace", w.ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

package compose_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// hostRunServer starts a server under workspace-write on a fresh workspace
// (with .config/ present, so .config/git and .config/fish can be made) and
// returns its tools, the session and the workspace.
func hostRunServer(t *testing.T, unprotect []string) (map[string]func(map[string]any) string, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws/.config/", "temp/")
	ws := filepath.Join(base, "ws")
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Exec: "sandbox", Mode: string(ww), Workspace: ws, VCS: "commit",
		TempRoots: []string{filepath.Join(base, "temp")}, Unprotect: unprotect,
		OneShot: true, LogLevel: "error", LogFormat: "json",
	})
	t.Cleanup(app.RequireStop)
	sess := session.New("s", ws)
	out := map[string]func(map[string]any) string{}
	for _, name := range []string{"write", "mkdir", "exec"} {
		out[name] = func(args map[string]any) string { return call(t, sess, tools[name], args).Text }
	}
	return out, ws
}

// TestHostRunFilesProtected (issue 23): every default host-run file, missing
// at the top of the workspace, is refused to both families under
// workspace-write: the write tool answers with the sandbox's denial marker
// and the protected rule, the command cannot create it as a file or a
// directory, and nothing is on disk afterwards; --unprotect .vscode allows
// that one only.
func TestHostRunFilesProtected(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServer(t, nil)
	for _, h := range sandbox.HostRunFiles() {
		t.Run(h.Name, func(t *testing.T) {
			target := filepath.Join(ws, h.Name)
			file := target
			if h.Dir {
				file = filepath.Join(target, "settings.json")
			}
			text := call["write"](map[string]any{"file_path": file, "content": "x\n"})
			assert.Contains(t, text, sandbox.DenialMarker(ww), text)
			assertAbsent(t, target)
			for _, cmd := range []string{"echo x > " + quote(target), "mkdir " + quote(target), "mkdir -p " + quote(file) + " && echo x > " + quote(file+"/f")} {
				text = call["exec"](map[string]any{"command": cmd})
				assert.NotContains(t, text, "exit code 0", cmd)
				assertAbsent(t, target)
			}
		})
	}
	t.Run("an existing host-run file is read-only to commands", func(t *testing.T) {
		fixture.Build(t, ws, ".vscode/tasks.json: old\n", "sub/.envrc: old\n")
		for _, p := range []string{".vscode/tasks.json", "sub/.envrc"} {
			text := call["exec"](map[string]any{"command": "echo x > " + quote(filepath.Join(ws, p))})
			assert.NotContains(t, text, "exit code 0")
			assert.Equal(t, "old\n", readFile(t, filepath.Join(ws, p)), text)
			text = call["write"](map[string]any{"file_path": filepath.Join(ws, p), "content": "x\n"})
			assert.Contains(t, text, sandbox.DenialMarker(ww), text)
			assert.Equal(t, "old\n", readFile(t, filepath.Join(ws, p)))
		}
	})
}

// TestUnprotectOne (issue 23): --unprotect .vscode lets both families write
// .vscode, and no other host-run file.
func TestUnprotectOne(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServer(t, []string{".vscode"})
	text := call["write"](map[string]any{"file_path": filepath.Join(ws, ".vscode/tasks.json"), "content": "x\n"})
	assert.Equal(t, "x\n", readFile(t, filepath.Join(ws, ".vscode/tasks.json")), text)
	text = call["exec"](map[string]any{"command": "echo y > " + quote(filepath.Join(ws, ".vscode/launch.json"))})
	assert.Equal(t, "y\n", readFile(t, filepath.Join(ws, ".vscode/launch.json")), text)
	text = call["exec"](map[string]any{"command": "mkdir " + quote(filepath.Join(ws, ".idea"))})
	assert.NotContains(t, text, "exit code 0")
	assertAbsent(t, filepath.Join(ws, ".idea"))
	text = call["write"](map[string]any{"file_path": filepath.Join(ws, ".mcp.json"), "content": "{}"})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(ws, ".mcp.json"))
}

// assertAbsent checks nothing is at p.
func assertAbsent(t *testing.T, p string) {
	t.Helper()
	_, err := os.Lstat(p)
	assert.True(t, os.IsNotExist(err), "%s exists on disk", p)
}

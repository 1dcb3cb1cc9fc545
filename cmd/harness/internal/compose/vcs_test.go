package compose_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// TestVCSFileTools (issue 23): under --vcs commit the file tools write a
// repository's history files (.git/index-like paths, refs, objects) but not
// what makes git run code: write, edit, move and delete of config, hooks,
// info/attributes and a worktree's `.git` file are refused with the denial
// marker and leave the bytes on disk; under --vcs read-only a ref is refused
// too.
func TestVCSFileTools(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, vcs := range []string{"commit", "read-only"} {
		t.Run(vcs, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			fixture.Build(t, base, "ws/", "temp/")
			ws := filepath.Join(base, "ws")
			require.NoError(t, osexec.Command("git", "init", "-q", ws).Run())
			fixture.Build(t, ws, ".git/hooks/post-commit: #!/bin/sh\n", "src.txt: x\n", "wt/.git: gitdir: ../.git/worktrees/wt\n",
				".git/worktrees/wt/HEAD: ref: refs/heads/wt\n", ".git/worktrees/wt/commondir: ../..\n")
			tools, app := toolsByName(t, config.Config{
				FS: "sandbox", Exec: "off", Mode: string(ww), Workspace: ws, VCS: vcs,
				TempRoots: []string{filepath.Join(base, "temp")}, OneShot: true, LogLevel: "error", LogFormat: "json",
			})
			defer app.RequireStop()
			sess := session.New("s", ws)
			protectedFiles := []string{".git/config", ".git/hooks/post-commit", "wt/.git", ".git/worktrees/wt/commondir"}
			before := map[string]string{}
			for _, p := range protectedFiles {
				before[p] = readFile(t, filepath.Join(ws, p))
			}
			refused := func(name string, args map[string]any) {
				t.Helper()
				text := call(t, sess, tools[name], args).Text
				assert.Contains(t, text, sandbox.DenialMarker(ww), "%s %v: %s", name, args, text)
			}
			at := func(p string) string { return filepath.Join(ws, p) }
			for _, p := range protectedFiles {
				refused("write", map[string]any{"file_path": at(p), "content": "x\n"})
				refused("edit", map[string]any{"file_path": at(p), "old_string": before[p][:3], "new_string": "zzz"})
				refused("delete", map[string]any{"path": at(p)})
				refused("move", map[string]any{"source": at(p), "destination": at("moved")})
				refused("move", map[string]any{"source": at("src.txt"), "destination": at(p), "overwrite": true})
			}
			refused("write", map[string]any{"file_path": at(".git/hooks/pre-commit"), "content": "#!/bin/sh\n"})
			refused("write", map[string]any{"file_path": at(".git/info/attributes"), "content": "* filter=x\n"})
			refused("write", map[string]any{"file_path": at(".git/config.worktree"), "content": "[core]\n"})
			refused("move", map[string]any{"source": at(".git/hooks"), "destination": at(".git/h2")})
			refused("delete", map[string]any{"path": at(".git"), "recursive": true})
			for _, p := range protectedFiles {
				assert.Equal(t, before[p], readFile(t, filepath.Join(ws, p)), p)
			}
			for _, p := range []string{".git/hooks/pre-commit", ".git/info/attributes", ".git/config.worktree", "moved", ".git/h2"} {
				_, err := os.Lstat(at(p))
				assert.True(t, os.IsNotExist(err), p)
			}

			// History: a ref and an index-like file.
			for _, p := range []string{".git/refs/heads/topic", ".git/worktrees/wt/index.lock"} {
				text := call(t, sess, tools["write"], map[string]any{"file_path": at(p), "content": "0123\n"}).Text
				got, err := os.ReadFile(at(p))
				if vcs == "commit" {
					require.NoError(t, err, text)
					assert.Equal(t, "0123\n", string(got))
				} else {
					assert.Contains(t, text, sandbox.DenialMarker(ww), text)
					assert.True(t, os.IsNotExist(err), p)
				}
			}
		})
	}
}

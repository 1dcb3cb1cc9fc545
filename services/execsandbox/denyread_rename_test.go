//go:build linux

package execsandbox_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// plant writes content at path (mode 0600, its directories 0700 made) and,
// under a root test, gives what it made beneath base to o.
func plant(t *testing.T, o owner, base, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	if os.Geteuid() == 0 {
		require.NoError(t, chownTree(base, o.uid))
	}
}

// requireUnchanged checks the host file at path still holds content with
// mode 0600.
func requireUnchanged(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, content, string(b))
	info, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode())
}

// TestDenyReadMasksInsideRepositoryShapedDirectories: a command gives
// `backend/`, which holds a `.env`, the shape of a git repository (HEAD,
// objects/, refs/); the next commands, in every mode, still cannot read
// the `.env`, nor rename `backend` away from its mask; the host's `.env`
// is unchanged.
func TestDenyReadMasksInsideRepositoryShapedDirectories(t *testing.T) {
	requireBwrapAndLandlock(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			s, pol := newSecretHome(t, o)
			env := filepath.Join(s.ws, "backend", ".env")
			content := "BACKENDENV=" + s.marker + "\n"
			plant(t, o, s.ws, env, content)
			r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
			require.NoError(t, err)
			run := func(mode sandbox.Mode, command string) exec.Result {
				t.Helper()
				res, err := r.Run(t.Context(), exec.Request{Command: command, Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, mode, s.ws)})
				require.NoError(t, err)
				assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, s.marker)
				return res
			}
			res := run(sandbox.WorkspaceWrite, "mkdir -p backend/objects backend/refs && echo 'ref: refs/heads/main' > backend/HEAD")
			require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
			require.FileExists(t, filepath.Join(s.ws, "backend", "HEAD"))
			for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
				t.Run(string(mode), func(t *testing.T) {
					res := run(mode, "cat backend/.env")
					assert.NotEqual(t, 0, res.ExitCode)
					require.NotNil(t, res.Confinement)
					assert.Contains(t, res.Confinement.Masked, env)
				})
			}
			res = run(sandbox.WorkspaceWrite, "mv backend backendX")
			assert.NotEqual(t, 0, res.ExitCode)
			assert.Contains(t, res.Stderr.Text, "busy")
			run(sandbox.WorkspaceWrite, "cat backendX/.env backend/.env")
			assert.NoDirExists(t, filepath.Join(s.ws, "backendX"))
			requireUnchanged(t, env, content)
		})
	}
}

// TestRenamingAParentOfADeniedPathFails: a command renames the directory
// holding a denied path (danger-full-access: `~/.config`, parent of the
// default `~/.config/gh`; workspace-write: `config`, parent of a
// --deny-read path in the workspace); the rename fails (the directory is a
// mount point in its view), the next command's `cat` of the new location
// shows nothing, and the host's file is unchanged at its path.
func TestRenamingAParentOfADeniedPathFails(t *testing.T) {
	requireBwrapAndLandlock(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			s, _ := newSecretHome(t, o)
			gh := filepath.Join(s.home, ".config", "gh", "hosts.yml")
			key := filepath.Join(s.ws, "config", "prod.key")
			content := "token: " + s.marker + "\n"
			plant(t, o, s.home, gh, content)
			plant(t, o, s.ws, key, content)
			pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: s.ws, TempRoots: []string{}, Homes: []string{s.home}, DenyRead: []string{key}})
			require.NoError(t, err)
			r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
			require.NoError(t, err)
			for _, c := range []struct {
				name     string
				mode     sandbox.Mode
				mv, cat  string
				file     string
				movedDir string
			}{
				{"danger-full-access ~/.config", sandbox.DangerFullAccess, "mv " + s.home + "/.config " + s.home + "/.config-x", "cat " + s.home + "/.config-x/gh/hosts.yml " + gh, gh, filepath.Join(s.home, ".config-x")},
				{"workspace-write config/", sandbox.WorkspaceWrite, "mv config config3", "cat config3/prod.key config/prod.key", key, filepath.Join(s.ws, "config3")},
			} {
				t.Run(c.name, func(t *testing.T) {
					res, err := r.Run(t.Context(), exec.Request{Command: c.mv, Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, c.mode, s.ws)})
					require.NoError(t, err)
					assert.NotEqual(t, 0, res.ExitCode)
					assert.Contains(t, res.Stderr.Text, "busy")
					res, err = r.Run(t.Context(), exec.Request{Command: c.cat, Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, c.mode, s.ws)})
					require.NoError(t, err)
					assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, s.marker)
					assert.NoDirExists(t, c.movedDir)
					requireUnchanged(t, c.file, content)
				})
			}
		})
	}
}

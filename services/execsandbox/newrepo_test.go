//go:build linux

package execsandbox_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestNewRepositoryDisarmed (issue 36): a repository a command makes below
// the top cannot carry anything the host's git would run: its config's
// core.fsmonitor, `!` alias and filter are removed when the command ends
// (the rest of it kept, byte for byte as git reads it), its hook loses its
// execute bits, a symlinked config is removed; the host's git status,
// commit and alias run none of them. A repository made with nothing that
// runs a program is left as it was.
func TestNewRepositoryDisarmed(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			pwned := filepath.Join(w.outside, "PWNED")
			require.NoError(t, os.Chmod(w.outside, 0o777))
			res := w.run(t, sandbox.WorkspaceWrite, `set -e
git init -q vendor/lib
git -C vendor/lib config core.fsmonitor "touch `+pwned+`-fsmonitor"
git -C vendor/lib config alias.st "!touch `+pwned+`-alias"
git -C vendor/lib config filter.x.smudge "touch `+pwned+`-filter"
git -C vendor/lib config remote.origin.url https://example.com/lib.git
git -C vendor/lib config user.name "A \"quoted\" name"
printf '#!/bin/sh\ntouch `+pwned+`-hook\n' > vendor/lib/.git/hooks/pre-commit
chmod +x vendor/lib/.git/hooks/pre-commit
git init -q vendor/plain
git -C vendor/plain config remote.origin.url https://example.com/plain.git
git init -q vendor/linked
ln -sf /etc/gitconfig-none vendor/linked/.git/config.worktree`)
			require.Zero(t, res.ExitCode, res.Stderr.Text)
			require.NotNil(t, res.Confinement)
			var disarmed []string
			for _, d := range res.Confinement.Disarmed {
				disarmed = append(disarmed, strings.TrimPrefix(d.Path, w.ws+"/")+": "+d.Action)
			}
			assert.ElementsMatch(t, []string{
				"vendor/lib/.git/config: those keys were removed",
				"vendor/lib/.git/hooks/pre-commit: its execute bits were cleared",
				"vendor/linked/.git/config.worktree: removed",
			}, disarmed)

			lib := filepath.Join(w.ws, "vendor", "lib")
			get := func(key string) string {
				out, _ := osexec.Command("git", "-c", "safe.directory=*", "-C", lib, "config", "--local", "--get", key).Output()
				return strings.TrimSpace(string(out))
			}
			assert.Equal(t, "https://example.com/lib.git", get("remote.origin.url"))
			assert.Equal(t, `A "quoted" name`, get("user.name"))
			assert.Empty(t, get("core.fsmonitor"))
			assert.Empty(t, get("alias.st"))
			fi, err := os.Stat(filepath.Join(lib, ".git", "hooks", "pre-commit"))
			require.NoError(t, err)
			assert.Zero(t, fi.Mode()&0o111, "the hook is executable on disk: %v", fi.Mode())
			_, err = os.Lstat(filepath.Join(w.ws, "vendor", "linked", ".git", "config.worktree"))
			assert.True(t, os.IsNotExist(err), "the symlinked config.worktree is left: %v", err)

			for _, args := range [][]string{{"status"}, {"-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x"}, {"st"}} {
				// safe.directory: a root server's test runs the host's
				// git on a repository of uid 1000.
				_ = osexec.Command("git", append([]string{"-c", "safe.directory=*", "-C", lib}, args...)...).Run()
			}
			matches, _ := filepath.Glob(pwned + "*")
			assert.Empty(t, matches, "the host's git ran a program the command left")

			out, err := osexec.Command("git", "-c", "safe.directory=*", "-C", filepath.Join(w.ws, "vendor", "plain"), "config", "--get", "remote.origin.url").Output()
			require.NoError(t, err)
			assert.Equal(t, "https://example.com/plain.git\n", string(out))
		})
	}
}

// TestNewRepositoryDisarmedBesideAnUnreadableDirectory (the attack
// review's input): a command that also leaves a directory of mode 0000
// made the search after it fail for a server of the command's own user,
// and the repository it made kept its core.fsmonitor, which the host's
// git then ran. The directory is opened up for the search (it is the
// server's user's: the command made it) and given back its mode; the
// repository is disarmed.
func TestNewRepositoryDisarmedBesideAnUnreadableDirectory(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			res := w.run(t, sandbox.WorkspaceWrite, `set -e
git init -q sub
git -C sub config core.fsmonitor "touch PWNED"
mkdir -p locked/deeper noexec
chmod 000 locked/deeper locked
chmod 600 noexec`)
			require.Zero(t, res.ExitCode, res.Stderr.Text)
			t.Cleanup(func() {
				_ = os.Chmod(filepath.Join(w.ws, "locked"), 0o755)
				_ = os.Chmod(filepath.Join(w.ws, "locked", "deeper"), 0o755)
				_ = os.Chmod(filepath.Join(w.ws, "noexec"), 0o755)
			})
			out, _ := osexec.Command("git", "-c", "safe.directory=*", "-C", filepath.Join(w.ws, "sub"), "config", "--local", "--get", "core.fsmonitor").Output()
			assert.Empty(t, strings.TrimSpace(string(out)), "the new repository kept its core.fsmonitor")
			for name, mode := range map[string]os.FileMode{"locked": 0, "noexec": 0o600} {
				fi, err := os.Lstat(filepath.Join(w.ws, name))
				require.NoError(t, err)
				assert.Equal(t, os.ModeDir|mode, fi.Mode(), "%s's mode was not given back", name)
			}
		})
	}
}

// TestNewRepositoryCommondirDisarmed (review): a repository a command makes
// whose commondir names a directory the command filled with a config that
// runs a program, but shaped like no repository (no HEAD), loses that
// commondir when the command ends, so the host's git entering it runs
// nothing; a linked worktree the command added to a repository it made
// keeps its commondir and works on the host.
func TestNewRepositoryCommondirDisarmed(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorld(t, primaryOwner(), exec.Config{}, nil)
	pwned := filepath.Join(w.outside, "PWNED")
	require.NoError(t, os.Chmod(w.outside, 0o777))
	res := w.run(t, sandbox.WorkspaceWrite, gitIdentity+`set -e
git init -q n
mkdir -p evil/objects evil/refs
printf '[core]\n\tfsmonitor = "touch `+pwned+`; false"\n' > evil/config
printf '../../evil\n' > n/.git/commondir
git init -q -b main r
git -C r commit -q --allow-empty -m first
git -C r worktree add -q ../r-wt`)
	require.Zero(t, res.ExitCode, res.Stderr.Text)
	require.NotNil(t, res.Confinement)
	var disarmed []string
	for _, d := range res.Confinement.Disarmed {
		disarmed = append(disarmed, strings.TrimPrefix(d.Path, w.ws+"/")+": "+d.Action)
	}
	assert.Contains(t, disarmed, "n/.git/commondir: removed")
	assert.NoFileExists(t, filepath.Join(w.ws, "n", ".git", "commondir"))
	assert.FileExists(t, filepath.Join(w.ws, "r", ".git", "worktrees", "r-wt", "commondir"), "a linked worktree's commondir was removed")

	host := func(dir string, args ...string) error {
		cmd := osexec.Command("git", append([]string{"-c", "safe.directory=*", "-C", filepath.Join(w.ws, dir)}, args...)...)
		cmd.Env = []string{"HOME=" + w.outside, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		return cmd.Run()
	}
	_ = host("n", "status")
	assert.NoFileExists(t, pwned, "the host's git ran the command's core.fsmonitor")
	assert.NoError(t, host("r-wt", "status"), "the linked worktree no longer works on the host")
}

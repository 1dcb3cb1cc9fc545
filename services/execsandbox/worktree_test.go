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
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestWorktreeOutsideCommits (issue 36): a workspace that is a linked
// worktree of a repository outside every root (one worktree per agent)
// adds, commits, stashes (push and apply: deleting a ref rewrites the
// repository's packed-refs, which stays read-only) and rebases under --vcs
// commit, and every attempt
// to change what runs code in the repository (its config, hooks,
// info/attributes, the worktree's config.worktree and commondir) fails:
// those files are byte-identical afterwards.
func TestWorktreeOutsideCommits(t *testing.T) {
	longTest(t)
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			var repo string
			// The deployment's mode: the roots of a worktree are the
			// policy's under workspace-write (carried takes Default's).
			w := newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) { c.Mode = sandbox.WorkspaceWrite }, func(f fixture) {
				repo = filepath.Join(f.outside, "repo")
				for _, args := range [][]string{
					{"init", "-q", repo},
					{"-C", repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
					{"-C", repo, "worktree", "add", "-q", f.ws, "-b", "agent"},
				} {
					out, err := osexec.Command("git", args...).CombinedOutput()
					require.NoError(t, err, "git %v: %s", args, out)
				}
				require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte("* text\n"), 0o644))
			})
			gitDir := filepath.Join(repo, ".git")
			wtDir := filepath.Join(gitDir, "worktrees", filepath.Base(w.ws))
			guarded := []string{
				filepath.Join(gitDir, "config"), filepath.Join(gitDir, "info", "attributes"), filepath.Join(gitDir, "HEAD"),
				filepath.Join(wtDir, "commondir"), filepath.Join(wtDir, "gitdir"),
			}
			before := protectedStates(t, guarded)
			hooksBefore := dirState(t, filepath.Join(gitDir, "hooks"))

			res := w.run(t, sandbox.WorkspaceWrite, `export GIT_AUTHOR_NAME=T GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=T GIT_COMMITTER_EMAIL=t@example.com
echo one > a && git add a && git commit -q -m one && echo committed
echo two > b && git add b && git stash -q && git stash list | wc -l && git stash apply -q && echo popped
git checkout -q -b side && echo three > c && git add c && git commit -q -m three && git checkout -q agent && git rebase -q side && echo rebased
git config core.fsmonitor "touch /tmp/PWNED" || echo config-refused
git config --worktree core.fsmonitor x 2>/dev/null || echo worktree-config-refused
printf '#!/bin/sh\ntouch /tmp/PWNED\n' > `+gitDir+`/hooks/pre-commit || echo hook-refused
echo '* filter=x' >> `+gitDir+`/info/attributes || echo attributes-refused
echo /tmp > `+wtDir+`/commondir || echo commondir-refused
echo x > `+wtDir+`/config.worktree || echo config-worktree-refused`)
			t.Logf("stdout %s\nstderr %s", res.Stdout.Text, res.Stderr.Text)
			for _, want := range []string{"committed", "1", "popped", "rebased", "config-refused", "hook-refused", "attributes-refused", "commondir-refused", "config-worktree-refused"} {
				assert.Contains(t, strings.Split(res.Stdout.Text, "\n"), want, res.Stderr.Text)
			}
			out, err := osexec.Command("git", "-c", "safe.directory=*", "-C", repo, "log", "--format=%s", "agent").Output()
			require.NoError(t, err)
			assert.Equal(t, "three\none\ninit\n", string(out), "the branch as the commands made it (rebased onto side)")
			assert.Equal(t, before, protectedStates(t, guarded))
			assert.Equal(t, hooksBefore, dirState(t, filepath.Join(gitDir, "hooks")))
			assert.NoFileExists(t, filepath.Join(wtDir, "config.worktree"))
		})
	}
}

package sandboxpolicy_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// linkedWorktree makes a repository at base/repo and a linked worktree of
// it at base/wt (git worktree add), and returns their canonical paths.
func linkedWorktree(t *testing.T) (repo, wt string) {
	t.Helper()
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	repo, wt = filepath.Join(base, "repo"), filepath.Join(base, "wt")
	for _, args := range [][]string{
		{"init", "-q", repo},
		{"-C", repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
		{"-C", repo, "worktree", "add", "-q", wt, "-b", "agent"},
	} {
		out, err := osexec.Command("git", args...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return repo, wt
}

// TestWorktreeRoots (issue 36): a workspace that is a linked worktree of a
// repository outside it gets, under workspace-write with --vcs commit, the
// worktree's git directory and the repository's objects, refs and logs as
// extra roots, and nothing of the repository else; --vcs read-only, other
// modes, and a `.git` file that is not such a worktree's (crafted to name
// another directory, or whose back-pointer names another worktree) get
// none.
func TestWorktreeRoots(t *testing.T) {
	repo, wt := linkedWorktree(t)
	git := filepath.Join(repo, ".git")
	want := []string{filepath.Join(git, "worktrees", "wt"), filepath.Join(git, "objects"), filepath.Join(git, "refs"), filepath.Join(git, "logs")}
	policy := func(t *testing.T, ws string, vcs sandbox.VCS) sandbox.ExecutionPolicy {
		t.Helper()
		s, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}, Homes: []string{}, VCS: vcs})
		require.NoError(t, err)
		return s.Default()
	}
	assert.Equal(t, want, policy(t, wt, sandbox.VCSCommit).ExtraRoots)
	assert.Empty(t, policy(t, wt, sandbox.VCSReadOnly).ExtraRoots)
	assert.Empty(t, policy(t, repo, sandbox.VCSCommit).ExtraRoots, "the main worktree holds its repository")

	t.Run("a crafted .git file", func(t *testing.T) {
		for name, content := range map[string]string{
			"names /etc":                   "gitdir: /etc\n",
			"names the repository itself":  "gitdir: " + git + "\n",
			"names its objects":            "gitdir: " + filepath.Join(git, "objects") + "\n",
			"not a pointer":                "hello\n",
			"names another worktree's dir": "gitdir: " + filepath.Join(git, "worktrees", "wt") + "\n",
		} {
			t.Run(name, func(t *testing.T) {
				ws := filepath.Join(t.TempDir(), "ws")
				require.NoError(t, os.Mkdir(ws, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(ws, ".git"), []byte(content), 0o644))
				assert.Empty(t, policy(t, ws, sandbox.VCSCommit).ExtraRoots)
			})
		}
	})
}

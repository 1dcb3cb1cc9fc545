//go:build linux

package execsandbox_test

import (
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// gitIdentity sets a commit identity for the commands' git (its config is
// read-only, so not there).
const gitIdentity = "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t GIT_CONFIG_NOSYSTEM=1; "

// repoGit runs git on the host, outside any sandbox, in dir.
func repoGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := osexec.Command("git", append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// gitRepoWorld is a world whose workspace is a git repository with one
// commit and a post-commit hook that records its runs, under vcs.
func gitRepoWorld(t *testing.T, o owner, vcs sandbox.VCS) world {
	t.Helper()
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	return newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) { c.VCS = vcs }, func(f fixture) {
		repoGit(t, f.ws, "init", "-q", "-b", "main")
		writeTree(t, f.ws, map[string]string{"a.txt": "a\n", ".git/hooks/post-commit": "#!/bin/sh\necho ran >> hook-ran\n"})
		require.NoError(t, os.Chmod(filepath.Join(f.ws, ".git/hooks/post-commit"), 0o755))
		repoGit(t, f.ws, "add", "a.txt")
		repoGit(t, f.ws, "commit", "-q", "-m", "first")
	})
}

// protectedBytes are the read-only members of the world's repository, and
// what else a command must not create, with their content ("" for
// missing).
func protectedBytes(ws string) map[string]string {
	names := []string{
		".git/config", ".git/hooks/post-commit", ".git/hooks/pre-commit", ".git/config.worktree",
		".git/info/attributes", ".git/objects/info/alternates", ".git/commondir",
		"wt/.git", ".git/worktrees/wt/commondir", ".git/worktrees/wt/gitdir", ".git/worktrees/wt/config.worktree",
	}
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(ws, n))
		switch {
		case err == nil:
			out[n] = string(b)
		case os.IsNotExist(err):
			out[n] = ""
		default:
			out[n] = "error: " + err.Error()
		}
	}
	return out
}

// TestVCSCommitGit (issue 23): under --vcs commit a command records history
// in the workspace's repository and in a linked worktree of it, while every
// attempt to change what makes git run code, or where it looks, leaves the
// disk as it was; the hook the repository had runs only as itself.
func TestVCSCommitGit(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := gitRepoWorld(t, o, sandbox.VCSCommit)
			res := w.run(t, sandbox.WorkspaceWrite, gitIdentity+
				"echo b > b.txt && git add b.txt && git commit -qm second && git branch feature && git tag v1 && "+
				"echo c >> a.txt && git stash -q && git worktree add -q wt feature")
			require.Equal(t, 0, res.ExitCode, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
			assert.Equal(t, "second\nfirst", repoGit(t, w.ws, "log", "--format=%s"))
			assert.Contains(t, repoGit(t, w.ws, "branch", "--list"), "feature")
			assert.Equal(t, "v1", repoGit(t, w.ws, "tag", "--list"))
			assert.Contains(t, repoGit(t, w.ws, "stash", "list"), "stash@{0}")

			// The linked worktree: its index and locks live in the main
			// repository's worktrees/wt.
			res = w.run(t, sandbox.WorkspaceWrite, gitIdentity+"cd wt && echo w > w.txt && git add w.txt && git commit -qm in-wt")
			require.Equal(t, 0, res.ExitCode, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
			assert.Equal(t, "in-wt", repoGit(t, w.ws, "log", "-1", "--format=%s", "feature"))

			// A fetch from a local remote.
			res = w.run(t, sandbox.WorkspaceWrite, gitIdentity+"git init -q -b main other && cd other && git fetch -q .. main:fetched && git log -1 --format=%s fetched")
			require.Equal(t, 0, res.ExitCode, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
			assert.Equal(t, "second\n", res.Stdout.Text)

			before := protectedBytes(w.ws)
			require.Contains(t, before[".git/config"], "[core]")
			require.NotEmpty(t, before["wt/.git"])
			require.NotEmpty(t, before[".git/worktrees/wt/commondir"])
			for _, c := range []string{
				"git config core.fsmonitor 'touch /tmp/pwn'",
				"git config --worktree core.fsmonitor 'touch /tmp/pwn'",
				"echo 'touch /tmp/pwn' > .git/hooks/post-commit",
				"echo x > .git/hooks/pre-commit",
				"mv .git/hooks .git/h2",
				"mv -T .git/h2 .git/hooks",
				"rm -rf .git/hooks",
				"rm .git/config",
				"mv .git/config .git/h2",
				"printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' > .git/h2 && mv .git/h2 .git/config",
				"mv .git .git2",
				"mkdir -p d && mv .git d/",
				"echo '[core]' > .git/config.worktree",
				"echo '* filter=pwn' > .git/info/attributes",
				"echo /tmp > .git/objects/info/alternates",
				"mkdir -p evil/objects evil/refs && printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' > evil/config && echo ../evil > .git/commondir",
				"rm -f .git/commondir; echo ../evil > .git/commondir",
				"echo 'gitdir: /tmp/evil' > wt/.git",
				"rm wt/.git",
				"echo ../../evil > .git/worktrees/wt/commondir",
				"echo '[core]' > .git/worktrees/wt/config.worktree",
				"mv .git/worktrees/wt .git/worktrees/w2",
			} {
				t.Run(c, func(t *testing.T) {
					res := w.run(t, sandbox.WorkspaceWrite, c)
					assert.NotEqual(t, 0, res.ExitCode, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
					assert.Equal(t, before, protectedBytes(w.ws), "the read-only members changed on disk")
				})
			}
			assert.NotContains(t, repoGit(t, w.ws, "config", "--list"), "fsmonitor")
			// The git directory's commondir placeholder (".": the git
			// directory itself) stays while the runner lives.
			kept, err := os.ReadFile(filepath.Join(w.ws, ".git/commondir"))
			require.NoError(t, err)
			assert.Equal(t, ".\n", string(kept))
			require.NoError(t, w.r.Close())
			// Nothing of the reservations is left behind once it closed,
			// and git still works on the host.
			for _, n := range []string{".git/config.worktree", ".git/info/attributes", ".git/objects/info/alternates", ".git/commondir", ".mcp.json", ".vscode"} {
				_, err := os.Lstat(filepath.Join(w.ws, n))
				assert.ErrorIs(t, err, fs.ErrNotExist, n)
			}
			assert.Equal(t, "", repoGit(t, w.ws, "status", "--porcelain", "--untracked-files=all", "--", ":!other", ":!wt", ":!b.txt", ":!hook-ran", ":!evil"))
		})
	}
}

// TestVCSReadOnlyGit (issue 23): --vcs read-only keeps the whole `.git`
// read-only: a commit is refused and the history is unchanged.
func TestVCSReadOnlyGit(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSReadOnly)
	res := w.run(t, sandbox.WorkspaceWrite, gitIdentity+"echo b > b.txt && git add b.txt && git commit -qm second")
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Contains(t, res.Stderr.Text, "Read-only file system")
	assert.Equal(t, "first", repoGit(t, w.ws, "log", "--format=%s"))
}

// TestVCSLandlockIsolation (issue 23): --exec-isolation landlock reserves
// nothing, so it keeps a repository's git directory wholly read-only under
// --vcs commit: a commit, a new hook and renaming .git away are refused.
func TestVCSLandlockIsolation(t *testing.T) {
	if !subproc.MountNamespace() {
		t.Skip("no mount namespace here: --exec-isolation landlock carves out no protected path")
	}
	if os.Geteuid() != 0 {
		t.Skip("as an ordinary user --exec-isolation landlock refuses every command that has protected paths to carve out (making the mounts private: operation not permitted): it fails closed, nothing to compare")
	}
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	ll, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, w.pol)
	require.NoError(t, err)
	before := protectedBytes(w.ws)
	for _, c := range []string{
		gitIdentity + "echo b > b.txt && git add b.txt && git commit -qm second",
		"echo x > .git/hooks/pre-commit",
		"mv .git g2 && mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
	} {
		res, err := ll.Run(t.Context(), exec.Request{Command: c, Workdir: w.ws, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws)})
		require.NoError(t, err)
		assert.NotEqual(t, 0, res.ExitCode, "%s: %s", c, res.Stderr.Text)
		assert.Equal(t, before, protectedBytes(w.ws), c)
	}
	assert.Equal(t, "first", repoGit(t, w.ws, "log", "--format=%s"))
}

// hostGitTry runs git on the host, outside any sandbox, in dir, with env
// added, and returns its output and error (the user's own `git rebase
// --continue`).
func hostGitTry(dir string, env []string, args ...string) (string, error) {
	cmd := osexec.Command("git", append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...)
	cmd.Env = append(append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_EDITOR=true"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestGitRunStateDisarmed (issue 35, the attack review's input): under
// --vcs commit a command leaves git state that would make the user's git
// on the host run a program: an interactive rebase stopped with an `exec`
// line still to come (as the review planted it, and by hand, `x` with
// leading blanks), a merge strategy naming a program of the workspace, a
// cherry-pick's options naming one, the same through a symlinked
// rebase-merge, in a linked worktree's gitdir, and in a repository the
// command made. When the command ends the runner has disarmed each (the
// file on disk runs nothing, Confinement.Disarmed names it), and the
// user's `git rebase --continue` (or cherry-pick's) on the host runs
// nothing.
func TestGitRunStateDisarmed(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := gitRepoWorld(t, o, sandbox.VCSCommit)
			pwned := filepath.Join(t.TempDir(), "PWNED")
			evil := "mkdir -p bin && printf '#!/bin/sh\\ntouch " + pwned + "\\n' > bin/git-merge-evil && chmod +x bin/git-merge-evil; "
			for _, c := range []struct {
				name    string
				command string
				file    string   // the state file, relative to the workspace
				gone    bool     // disarmed by removing it
				host    []string // the user's git on the host, in the workspace
				dir     string   // where the host's git runs, relative ("" the workspace)
			}{
				{
					name: "the review's interactive rebase with an exec line",
					command: gitIdentity + "echo c > c.txt && git add c.txt && git commit -qm c && " +
						"GIT_SEQUENCE_EDITOR=\"printf 'break\\nexec touch " + pwned + "\\n' >\" git rebase -i HEAD~1",
					file: ".git/rebase-merge/git-rebase-todo", host: []string{"rebase", "--continue"},
				},
				{
					name: "a planted todo with an x line",
					command: "mkdir -p .git/rebase-merge && cd .git/rebase-merge && git rev-parse HEAD > onto && cp onto orig-head && " +
						"echo refs/heads/main > head-name && : > interactive && printf '\\t  x touch " + pwned + "\\r\\n' > git-rebase-todo",
					file: ".git/rebase-merge/git-rebase-todo", host: []string{"rebase", "--continue"},
				},
				{
					name:    "a merge strategy program",
					command: evil + "mkdir -p .git/rebase-merge && echo evil > .git/rebase-merge/strategy",
					file:    ".git/rebase-merge/strategy", gone: true,
				},
				{
					name:    "a cherry-pick's strategy option",
					command: evil + "mkdir -p .git/sequencer && printf '[options] strategy = evil\\n' > .git/sequencer/opts",
					file:    ".git/sequencer/opts", gone: true,
				},
				{
					name:    "a symlinked rebase-merge",
					command: "mkdir -p elsewhere && printf 'exec touch " + pwned + "\\n' > elsewhere/git-rebase-todo && ln -s ../elsewhere .git/rebase-merge",
					file:    ".git/rebase-merge", gone: true,
				},
				{
					name: "a linked worktree's rebase",
					command: gitIdentity + "git worktree add -q wt2 -b side && cd wt2 && " +
						"GIT_SEQUENCE_EDITOR=\"printf 'break\\nexec touch " + pwned + "\\n' >\" git rebase -i HEAD",
					file: ".git/worktrees/wt2/rebase-merge/git-rebase-todo", host: []string{"rebase", "--continue"}, dir: "wt2",
				},
				{
					name: "a repository the command made",
					command: gitIdentity + "git init -q -b main sub && cd sub && echo s > s && git add s && git commit -qm s && " +
						"GIT_SEQUENCE_EDITOR=\"printf 'break\\nexec touch " + pwned + "\\n' >\" git rebase -i HEAD --root",
					file: "sub/.git/rebase-merge/git-rebase-todo", host: []string{"rebase", "--continue"}, dir: "sub",
				},
			} {
				t.Run(c.name, func(t *testing.T) {
					res := w.run(t, sandbox.WorkspaceWrite, c.command)
					require.NotNil(t, res.Confinement)
					p := filepath.Join(w.ws, c.file)
					require.NotEmpty(t, res.Confinement.Disarmed, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
					assert.Equal(t, p, res.Confinement.Disarmed[0].Path)
					if c.gone {
						_, err := os.Lstat(p)
						assert.ErrorIs(t, err, fs.ErrNotExist, "%s is still on disk", c.file)
					} else {
						b, err := os.ReadFile(p)
						require.NoError(t, err)
						assert.Contains(t, string(b), "# disarmed by harness: ")
						for _, s := range sandbox.GitRunStates() {
							if s.Todo {
								_, arms := s.Arms(b)
								assert.False(t, arms, "the todo on disk still runs a program: %q", b)
							}
						}
					}
					if c.host != nil {
						out, err := hostGitTry(filepath.Join(w.ws, c.dir), []string{"PATH=" + filepath.Join(w.ws, "bin") + ":" + os.Getenv("PATH")}, c.host...)
						t.Logf("host git %v: %v %s", c.host, err, out)
					}
					_, err := os.Lstat(pwned)
					assert.ErrorIs(t, err, fs.ErrNotExist, "the user's git ran the command's program")
					// Leave the repository as it was for the next case.
					_, _ = hostGitTry(filepath.Join(w.ws, c.dir), nil, "rebase", "--abort")
					require.NoError(t, os.RemoveAll(filepath.Join(w.ws, ".git/rebase-merge")))
					require.NoError(t, os.RemoveAll(filepath.Join(w.ws, ".git/sequencer")))
				})
			}
		})
	}
}

// TestGitRunStateKept (issue 35): git's own rebase, cherry-pick and revert
// keep working inside the sandbox: a plain rebase that stops on a conflict
// leaves its rebase-merge/ state as git wrote it, nothing is disarmed, and
// the user finishes it on the host; an exec rebase the user started on the
// host before a command is not the command's, and is left as it is.
func TestGitRunStateKept(t *testing.T) {
	longTest(t)
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	res := w.run(t, sandbox.WorkspaceWrite, gitIdentity+
		"git checkout -qb topic && echo topic > a.txt && git commit -qam topic && "+
		"git checkout -q main && echo main > a.txt && git commit -qam main && "+
		"git checkout -q topic && git rebase main; git status --short")
	assert.Empty(t, res.Confinement.Disarmed)
	todo := filepath.Join(w.ws, ".git/rebase-merge/git-rebase-todo")
	_, err := os.Stat(todo)
	require.NoError(t, err, "the conflicted rebase has its state: stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
	res = w.run(t, sandbox.WorkspaceWrite, gitIdentity+"echo both > a.txt && git add a.txt && GIT_EDITOR=true git rebase --continue")
	assert.Equal(t, 0, res.ExitCode, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
	assert.Empty(t, res.Confinement.Disarmed)
	assert.Equal(t, "topic\nmain\nfirst", repoGit(t, w.ws, "log", "--format=%s"))

	res = w.run(t, sandbox.WorkspaceWrite, gitIdentity+"git checkout -q main && git cherry-pick topic; git cherry-pick --abort; git revert --no-edit HEAD")
	assert.Equal(t, 0, res.ExitCode, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
	assert.Empty(t, res.Confinement.Disarmed)

	// The user's own exec rebase, begun on the host.
	ran := filepath.Join(w.ws, "user-exec-ran")
	out, err := hostGitTry(w.ws, []string{"GIT_SEQUENCE_EDITOR=printf 'break\\nexec touch " + ran + "\\n' >"}, "rebase", "-i", "HEAD")
	require.NoError(t, err, out)
	before, err := os.ReadFile(todo)
	require.NoError(t, err)
	res = w.run(t, sandbox.WorkspaceWrite, "git status --short >/dev/null")
	assert.Empty(t, res.Confinement.Disarmed)
	after, err := os.ReadFile(todo)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the user's own todo was changed")
	out, err = hostGitTry(w.ws, nil, "rebase", "--continue")
	require.NoError(t, err, out)
	_, err = os.Stat(ran)
	assert.NoError(t, err, "the user's own exec line ran")
}

// TestExecutableOutOfReach (issue 35, the attack review's input): a
// checkout of harness used as the workspace, whose bin/harness is the
// binary the client starts: no command replaces it (in place, by rename,
// by removing its directory, or its directory renamed away), so the
// client's next start runs what it ran before.
func TestExecutableOutOfReach(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) {
				c.Executables = []string{filepath.Join(c.WorkspaceRoot, "bin/harness")}
			}, func(f fixture) {
				writeTree(t, f.ws, map[string]string{"bin/harness": "#!/bin/sh\necho harness\n", "evil": "#!/bin/sh\necho pwned\n"})
				require.NoError(t, os.Chmod(filepath.Join(f.ws, "bin/harness"), 0o755))
			})
			exe := filepath.Join(w.ws, "bin/harness")
			for _, c := range []string{
				"echo 'echo pwned' > bin/harness",
				"cp evil bin/harness",
				"mv -f evil bin/harness",
				"rm -f bin/harness && cp evil bin/harness",
				"rm -rf bin && mkdir bin && cp evil bin/harness",
				"mv bin bin2 && mkdir bin && cp evil bin/harness",
				"chmod 777 bin/harness",
			} {
				res := w.run(t, sandbox.WorkspaceWrite, c)
				assert.NotEqual(t, 0, res.ExitCode, "%s: stdout %q stderr %q", c, res.Stdout.Text, res.Stderr.Text)
				b, err := os.ReadFile(exe)
				require.NoError(t, err, c)
				assert.Equal(t, "#!/bin/sh\necho harness\n", string(b), c)
				st, err := os.Stat(exe)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o755), st.Mode().Perm(), c)
			}
			res := w.run(t, sandbox.WorkspaceWrite, "echo ok > bin/other")
			assert.Equal(t, 0, res.ExitCode, "the rest of bin/ stays writable: %q", res.Stderr.Text)
		})
	}
}

// TestGitRunStateDisarmedVCSReadOnly (issue 35): under --vcs read-only the
// workspace's .git is read-only whole, but a repository a command makes
// below the top while it runs is its own: the exec line it leaves in that
// repository's rebase todo is disarmed when it ends.
func TestGitRunStateDisarmedVCSReadOnly(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSReadOnly)
	res := w.run(t, sandbox.WorkspaceWrite, gitIdentity+"git init -q -b main sub && cd sub && echo s > s && git add s && git commit -qm s && "+
		"GIT_SEQUENCE_EDITOR=\"printf 'break\\nexec touch pwned\\n' >\" git rebase -i HEAD")
	todo := filepath.Join(w.ws, "sub/.git/rebase-merge/git-rebase-todo")
	require.NotEmpty(t, res.Confinement.Disarmed, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
	assert.Equal(t, todo, res.Confinement.Disarmed[0].Path)
	b, err := os.ReadFile(todo)
	require.NoError(t, err)
	assert.Equal(t, "# disarmed by harness: exec touch pwned\n", string(b))
}

// TestGitRunStateDisarmedLandlock (issue 35): under --exec-isolation
// landlock, where the workspace's git directory is read-only whole, a
// repository a command makes below the top is its own: the exec line it
// leaves in that repository's rebase todo is disarmed when it ends.
func TestGitRunStateDisarmedLandlock(t *testing.T) {
	if !subproc.MountNamespace() {
		t.Skip("no mount namespace here: --exec-isolation landlock carves out no protected path")
	}
	if os.Geteuid() != 0 {
		t.Skip("as an ordinary user --exec-isolation landlock refuses every command that has protected paths to carve out (making the mounts private: operation not permitted): it fails closed, nothing to check")
	}
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	ll, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, w.pol)
	require.NoError(t, err)
	res, err := ll.Run(t.Context(), exec.Request{
		Command: gitIdentity + "git init -q -b main sub && cd sub && echo s > s && git add s && git commit -qm s && " +
			"GIT_SEQUENCE_EDITOR=\"printf 'break\\nexec touch pwned\\n' >\" git rebase -i HEAD",
		Workdir: w.ws, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
	})
	require.NoError(t, err)
	todo := filepath.Join(w.ws, "sub/.git/rebase-merge/git-rebase-todo")
	require.NotNil(t, res.Confinement)
	require.NotEmpty(t, res.Confinement.Disarmed, "stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
	assert.Equal(t, todo, res.Confinement.Disarmed[0].Path)
	b, err := os.ReadFile(todo)
	require.NoError(t, err)
	assert.Equal(t, "# disarmed by harness: exec touch pwned\n", string(b))
}

// TestCommondirKeptAcrossCommands: a repository's missing `commondir` is
// reserved by one placeholder (a 0444 file holding ".") that the runner
// keeps from its first command until it closes, so a host's git, which
// reads the file where it found it, never sees it vanish between commands
// ("failed to read .git/commondir", TestHostRewritesGitConfig); one the
// host removes is made again by the next command, which still cannot
// write it; Close removes it.
func TestCommondirKeptAcrossCommands(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	path := filepath.Join(w.ws, ".git", "commondir")
	placeholder := func() uint64 {
		t.Helper()
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(path, &st), "no placeholder at .git/commondir")
		assert.Equal(t, uint32(unix.S_IFREG|0o444), st.Mode)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, ".\n", string(b))
		return st.Ino
	}
	require.Equal(t, 0, w.run(t, sandbox.WorkspaceWrite, "true").ExitCode)
	first := placeholder()
	assert.Equal(t, filepath.Join(w.ws, ".git"), repoGit(t, w.ws, "rev-parse", "--path-format=absolute", "--git-common-dir"), "the host's git beside the placeholder")
	require.Equal(t, 0, w.run(t, sandbox.WorkspaceWrite, "true").ExitCode)
	assert.Equal(t, first, placeholder(), "the placeholder was made again, not kept")

	require.NoError(t, os.Remove(path))
	res := w.run(t, sandbox.WorkspaceWrite, "echo ../evil > .git/commondir")
	assert.NotEqual(t, 0, res.ExitCode, "a command wrote .git/commondir: stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
	placeholder() // made again

	require.NoError(t, w.r.Close())
	_, err := os.Lstat(path)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the kept placeholder outlived the runner")
	assert.Equal(t, "first", repoGit(t, w.ws, "log", "--format=%s"))
}

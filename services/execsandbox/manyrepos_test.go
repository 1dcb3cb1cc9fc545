//go:build linux

package execsandbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestManyRepositories (issue 34): a workspace repository holding 30
// others (a ~/src). Binding each one's read-only members apart took
// bubblewrap about 2.5 s a command at load 12 (it reads the mount table
// after every bind), and some 250 made every command fail on its argument
// limit. Past maxViewBinds the git directories of the repositories not
// holding the workdir are read-only whole: a command at the top commits
// in the workspace's repository but not in r1 (EROFS; the result names the
// 30 directories), with its workdir in r7 it commits there, and in every
// case no command writes a config; nothing is left in any git directory.
func TestManyRepositories(t *testing.T) {
	longTest(t)
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	var nested []string
	for i := range 30 {
		r := filepath.Join(w.ws, fmt.Sprintf("r%d", i))
		repoGit(t, w.ws, "init", "-q", "-b", "main", r)
		nested = append(nested, filepath.Join(r, ".git"))
	}
	if os.Geteuid() == 0 && w.uid != 0 {
		require.NoError(t, chownTree(w.ws, w.uid))
	}
	before := map[string][]string{}
	for _, g := range nested {
		before[g] = listTree(t, g)
	}
	configs := func() map[string]string {
		out := map[string]string{}
		for _, g := range append([]string{filepath.Join(w.ws, ".git")}, nested...) {
			out[g] = readFile(t, filepath.Join(g, "config"))
		}
		return out
	}
	wantConfigs := configs()
	run := func(workdir, command string) exec.Result {
		t.Helper()
		res, err := w.r.Run(session.NewContext(t.Context(), w.sess), exec.Request{
			Command: command, Workdir: workdir, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
		})
		require.NoError(t, err)
		require.NotNil(t, res.Confinement)
		return res
	}
	commit := "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m agent"

	res := run(w.ws, commit+" && echo top-ok; cd r1 && "+commit+"; echo r1=$?")
	assert.Contains(t, res.Stdout.Text, "top-ok\nr1=128\n", res.Stderr.Text)
	assert.Contains(t, res.Stderr.Text, "Read-only file system")
	assert.ElementsMatch(t, nested, res.Confinement.WholeGitDirs)

	r7 := filepath.Join(w.ws, "r7")
	res = run(r7, commit+" && echo r7-ok; echo '[core]' >> .git/config; echo '[core]' >> ../r1/.git/config")
	assert.Contains(t, res.Stdout.Text, "r7-ok", res.Stderr.Text)
	assert.Len(t, res.Confinement.WholeGitDirs, 29)
	assert.NotContains(t, res.Confinement.WholeGitDirs, filepath.Join(r7, ".git"))
	assert.Equal(t, 2, strings.Count(res.Stderr.Text, "Read-only file system"), res.Stderr.Text)

	assert.Equal(t, "agent", strings.TrimSpace(repoGit(t, r7, "log", "-1", "--format=%s")))
	assert.Equal(t, "agent", strings.TrimSpace(repoGit(t, w.ws, "log", "-1", "--format=%s")))
	assert.Equal(t, wantConfigs, configs())
	for _, g := range nested {
		if g == filepath.Join(r7, ".git") {
			continue
		}
		assert.Equal(t, before[g], listTree(t, g), "%s: nothing made or left", g)
	}
}

// TestViewPastTheArgumentLimit (issue 34, the attack review's input): a
// workspace of 3,100 `.envrc` files makes a view past bubblewrap's limit
// on its arguments: the command is refused with EXEC_START_FAILED, its
// counts and a remedy (bubblewrap's own message named none), and it did
// not run.
func TestViewPastTheArgumentLimit(t *testing.T) {
	longTest(t)
	w := newWorldWith(t, primaryOwner(), exec.Config{}, func(c *sandboxpolicy.Config) { c.VCS = sandbox.VCSCommit }, func(f fixture) {
		for i := range 3100 {
			d := filepath.Join(f.ws, fmt.Sprintf("d%d", i))
			require.NoError(t, os.Mkdir(d, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(d, ".envrc"), []byte("export A=1\n"), 0o644))
		}
	})
	_, err := w.try(t.Context(), sandbox.WorkspaceWrite, "touch ran", time.Minute)
	var ee *exec.Error
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, exec.CodeStartFailed, ee.Code)
	assert.Contains(t, ee.Message, "more than its limit of")
	assert.Contains(t, ee.Message, "3100 protected paths")
	assert.Contains(t, ee.Message, "Remedy:")
	assert.NoFileExists(t, filepath.Join(w.ws, "ran"))
}

// listTree lists what lies beneath dir, each path with its mode.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, p+" "+info.Mode().String())
		return nil
	}))
	return out
}

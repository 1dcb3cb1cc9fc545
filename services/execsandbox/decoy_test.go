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
	"github.com/dsh-go/harness/services/sandbox"
)

func disarmed(res exec.Result) any {
	if res.Confinement == nil {
		return nil
	}
	return res.Confinement.Disarmed
}

// nestedRepo makes a git repository at dir (a project inside the world's
// workspace, as a user's checkout of a dependency or a monorepo's member),
// owned by the world's owner.
func nestedRepo(t *testing.T, w world, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	repoGit(t, dir, "init", "-q", "-b", "main")
	if os.Geteuid() == 0 && w.uid != 0 {
		require.NoError(t, chownTree(dir, w.uid))
	}
}

// decoyWrite is what the command does: append a core.fsmonitor to the
// nested repository's config at its new place (hold/), which the file
// tools then move back to proj/.
// It then waits for the move back, as an agent's next tool call would
// come while the command runs: the runner's check after the command
// (gitStateCheck.disarm) then finds proj/.git where it was before and
// disarms nothing.
const decoyWrite = "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> hold/.git/config && echo WROTE; touch written; " +
	"i=0; while [ -e hold ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"

// runThenMoveBack runs decoyWrite in w and, once it wrote (or ended),
// runs back (the file tools' moves), then waits for it.
func runThenMoveBack(t *testing.T, w world, back func()) exec.Result {
	t.Helper()
	done := make(chan exec.Result, 1)
	go func() {
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, decoyWrite, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for range 600 {
		if _, err := os.Stat(filepath.Join(w.ws, "written")); err == nil {
			break
		}
		select {
		case res := <-done:
			back()
			return res
		case <-time.After(50 * time.Millisecond):
		}
	}
	back()
	return <-done
}

// TestNestedRepositorySwappedForADecoy (the attack review of ff9821f): a
// directory holding a nested repository (proj/, which the file tools' move
// takes) is renamed to hold/ between the search and the start, and another
// repository (decoy/) to proj/. Every protected path of proj/.git is then
// there, another file on a read-only bind, but the real config, aside in
// hold/, is on the writable mount: the start must be a change (the git
// directory is not the one found), searched again, hold/.git found and
// bound read-only. The command's write is refused and the host's git in
// proj/, moved back, runs nothing the command wrote.
func TestNestedRepositorySwappedForADecoy(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	proj, hold, decoy := filepath.Join(w.ws, "proj"), filepath.Join(w.ws, "hold"), filepath.Join(w.ws, "decoy")
	nestedRepo(t, w, proj)
	nestedRepo(t, w, decoy)
	config := filepath.Join(proj, ".git", "config")
	before := readFile(t, config)
	opens := heldPlaceholder(t, w, func() {
		if err := os.Rename(proj, hold); err != nil {
			t.Error(err)
		}
		if err := os.Rename(decoy, proj); err != nil {
			t.Error(err)
		}
	})
	res := runThenMoveBack(t, w, func() {
		if _, err := os.Stat(hold); err != nil {
			return // refused and searched again: nothing was moved back yet
		}
		require.NoError(t, os.Rename(proj, decoy))
		require.NoError(t, os.Rename(hold, proj))
	})
	t.Logf("opens %d; exit %d; stdout %q; stderr %q; disarmed %+v", opens(), res.ExitCode, res.Stdout.Text, res.Stderr.Text, disarmed(res))
	if _, err := os.Stat(hold); err == nil {
		require.NoError(t, os.Rename(proj, decoy))
		require.NoError(t, os.Rename(hold, proj))
	}
	hostGitRuns(t, proj)
	assert.NotContains(t, res.Stdout.Text, "WROTE")
	assert.Equal(t, before, readFile(t, config), "the nested repository's config, written by a command")
}

// hostGitRuns runs the host's git status in proj and logs whether the
// command's core.fsmonitor ran (proj/pwned made).
func hostGitRuns(t *testing.T, proj string) {
	t.Helper()
	repoGit(t, proj, "status", "--short")
	_, err := os.Stat(filepath.Join(proj, "pwned"))
	t.Logf("the host's git status in proj ran the command's core.fsmonitor: %v", err == nil)
}

// TestNestedRepositoryMovedAway (the attack review of ff9821f, its first
// older finding): a directory holding a nested repository (proj/) is
// renamed to hold/ between the search and the start, nothing put in its
// place. Every protected path of proj/.git is then missing with its git
// directory, as when a scratch repository is removed; but this one was
// moved, and its config, in hold/, is on the writable mount. The start
// must be a change (the git directory found is still there, elsewhere),
// searched again, hold/.git found and bound read-only: the command's write
// is refused and the host's git in proj/, moved back, runs nothing the
// command wrote.
func TestNestedRepositoryMovedAway(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	proj, hold := filepath.Join(w.ws, "proj"), filepath.Join(w.ws, "hold")
	nestedRepo(t, w, proj)
	config := filepath.Join(proj, ".git", "config")
	before := readFile(t, config)
	opens := heldPlaceholder(t, w, func() {
		if err := os.Rename(proj, hold); err != nil {
			t.Error(err)
		}
	})
	res := runThenMoveBack(t, w, func() {
		if _, err := os.Stat(hold); err == nil {
			require.NoError(t, os.Rename(hold, proj))
		}
	})
	t.Logf("opens %d; exit %d; stdout %q; stderr %q; disarmed %+v", opens(), res.ExitCode, res.Stdout.Text, res.Stderr.Text, disarmed(res))
	hostGitRuns(t, proj)
	assert.NotContains(t, res.Stdout.Text, "WROTE")
	assert.Equal(t, before, readFile(t, config), "the nested repository's config, written by a command")
}

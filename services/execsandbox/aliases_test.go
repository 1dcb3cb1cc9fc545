//go:build linux

package execsandbox_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// aliasWrite appends a core.fsmonitor through each of names, saying WROTE
// for each that took it.
func aliasWrite(names ...string) string {
	c := ""
	for _, n := range names {
		c += "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> " + n + " && echo WROTE " + n + "; "
	}
	return c + "true"
}

// TestProtectedFileHardLinked (the attack review of ff9821f, its second and
// third older findings): a protected file's read-only bind covers its path
// only, so another name of it (a hard link) in a writable root would let a
// command write it: a user's hard-linked dotfiles, or a `.git/config` a
// command linked while the host's rewrite left it writable, for every later
// command. Each other name in the writable roots is protected as the file
// is: beside it in the workspace, inside the split git directory (writable
// but for its members), in a nested directory renamed between two commands
// (the cached names no longer hold), and under the Landlock isolation.
// The bytes on disk stay the host's.
func TestProtectedFileHardLinked(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	config := filepath.Join(w.ws, ".git", "config")
	before := readFile(t, config)
	link := func(name string) {
		t.Helper()
		p := filepath.Join(w.ws, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if os.Geteuid() == 0 && w.uid != 0 {
			require.NoError(t, chownTo(filepath.Dir(p), w.uid))
		}
		require.NoError(t, os.Link(config, p))
	}
	link("alias")
	link(".git/alias")
	link("d/e/alias")
	res := w.run(t, sandbox.WorkspaceWrite, aliasWrite("alias", ".git/alias", "d/e/alias", ".git/config"))
	assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
	assert.Equal(t, before, readFile(t, config))

	// The directory holding a name renamed: the file's ctime is as it
	// was, the cached name is not there any more.
	require.NoError(t, os.Rename(filepath.Join(w.ws, "d"), filepath.Join(w.ws, "moved")))
	res = w.run(t, sandbox.WorkspaceWrite, aliasWrite("moved/e/alias"))
	assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
	assert.Equal(t, before, readFile(t, config))

	// One more link made on the host: found by the next command.
	link("later")
	res = w.run(t, sandbox.WorkspaceWrite, aliasWrite("later", "moved/e/alias"))
	assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
	assert.Equal(t, before, readFile(t, config))

	t.Run("landlock isolation", func(t *testing.T) {
		if !subproc.MountNamespace() || os.Geteuid() != 0 {
			t.Skip("--exec-isolation landlock carves out protected paths only as root with a mount namespace (TestVCSLandlockIsolation)")
		}
		ll, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, w.pol)
		require.NoError(t, err)
		res, err := ll.Run(t.Context(), exec.Request{Command: aliasWrite("alias", "later"), Workdir: w.ws, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws)})
		require.NoError(t, err)
		assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
		assert.Equal(t, before, readFile(t, config))
	})
}

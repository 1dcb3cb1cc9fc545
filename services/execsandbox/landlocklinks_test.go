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

// TestLandlockIsolationRestoresLinks (issue 34, left by the last review): under
// --exec-isolation landlock, as under bubblewrap, a protected link (a
// dotfiles `.bashrc`) that a command removes and replaces with its own
// file is put back when it ends: the command's file moved aside, the link
// made again, the answer saying so; the dotfiles' file unchanged.
func TestLandlockIsolationRestoresLinks(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	f, pol := newFixture(t)
	require.NoError(t, os.Mkdir(filepath.Join(f.ws, "dotfiles"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.ws, "dotfiles/bashrc"), []byte("mine\n"), 0o644))
	require.NoError(t, os.Symlink("dotfiles/bashrc", filepath.Join(f.ws, ".bashrc")))
	r, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, pol)
	require.NoError(t, err)
	res, err := r.Run(t.Context(), exec.Request{
		Command: "rm .bashrc && echo 'touch /tmp/PWNED' > .bashrc; echo done",
		Workdir: f.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.WorkspaceWrite, f.ws),
	})
	require.NoError(t, err)
	assert.Equal(t, "done\n", res.Stdout.Text, res.Stderr.Text)
	got, err := os.Readlink(filepath.Join(f.ws, ".bashrc"))
	require.NoError(t, err, "a link again")
	assert.Equal(t, "dotfiles/bashrc", got)
	aside, err := filepath.Glob(filepath.Join(f.ws, ".bashrc.harness-replaced-*"))
	require.NoError(t, err)
	require.Len(t, aside, 1)
	assert.Equal(t, "touch /tmp/PWNED\n", readFile(t, aside[0]))
	assert.Equal(t, "mine\n", readFile(t, filepath.Join(f.ws, "dotfiles/bashrc")))
	require.NotNil(t, res.Confinement)
	require.Len(t, res.Confinement.Disarmed, 1)
	assert.True(t, res.Confinement.Disarmed[0].Link)
	assert.Equal(t, filepath.Join(f.ws, ".bashrc"), res.Confinement.Disarmed[0].Path)
}

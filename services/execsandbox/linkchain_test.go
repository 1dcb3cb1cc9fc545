//go:build linux

package execsandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestIntermediateLinkRestored (issue 34, the last review's A8): a
// protected `.envrc` reaching its file through a chain of links (`.envrc ->
// l1 -> real/envrc`, l1 itself protecting nothing): a command that points
// the intermediate l1 at a file of its own finds, when it ends, l1 made
// again as it was and its own link moved aside, and the answer says so;
// direnv on the host reads real/envrc, unchanged.
func TestIntermediateLinkRestored(t *testing.T) {
	w := newWorldWith(t, primaryOwner(), exec.Config{}, func(c *sandboxpolicy.Config) { c.VCS = sandbox.VCSCommit }, func(f fixture) {
		require.NoError(t, os.Mkdir(filepath.Join(f.ws, "real"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(f.ws, "real/envrc"), []byte("export A=1\n"), 0o644))
		require.NoError(t, os.Symlink("real/envrc", filepath.Join(f.ws, "l1")))
		require.NoError(t, os.Symlink("l1", filepath.Join(f.ws, ".envrc")))
	})
	res := w.run(t, sandbox.WorkspaceWrite, "echo 'touch /tmp/PWNED' > evil && ln -sfn evil l1 && echo pointed")
	assert.Contains(t, res.Stdout.Text, "pointed", res.Stderr.Text)
	got, err := os.Readlink(filepath.Join(w.ws, "l1"))
	require.NoError(t, err)
	assert.Equal(t, "real/envrc", got)
	assert.Equal(t, "export A=1\n", readFile(t, filepath.Join(w.ws, ".envrc")))
	aside, err := filepath.Glob(filepath.Join(w.ws, "l1.harness-replaced-*"))
	require.NoError(t, err)
	require.Len(t, aside, 1)
	moved, err := os.Readlink(aside[0])
	require.NoError(t, err)
	assert.Equal(t, "evil", moved, "the command's own link, moved aside")
	require.NotNil(t, res.Confinement)
	require.Len(t, res.Confinement.Disarmed, 1)
	assert.Equal(t, filepath.Join(w.ws, "l1"), res.Confinement.Disarmed[0].Path)
	assert.True(t, res.Confinement.Disarmed[0].Link)
}

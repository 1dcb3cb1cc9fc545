package execsandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestNamedUnixSocketRetargeted (review of issue 24, F6): a named socket
// whose directory lies in a writable root is pinned at start. A command
// that renames that directory away and puts one in its place holding a
// symlink of the socket's name to another listener does not retarget the
// grant: the next command gets nothing at the name, and the other listener
// (under /var/tmp) accepts nothing.
func TestNamedUnixSocketRetargeted(t *testing.T) {
	perl := fixtures.Perl(t)
	w := newWorld(t, primaryOwner(), exec.Config{}, nil)
	dir := filepath.Join(w.cache, "agentdir")
	require.NoError(t, os.Mkdir(dir, 0o755))
	named := fixtures.ListenUnix(t, filepath.Join(dir, "agent.sock"))
	out := fixtures.OutsideDir(t)
	require.NoError(t, os.Chmod(out, 0o755))
	other := fixtures.ListenUnix(t, filepath.Join(out, "dock.sock"))
	require.NoError(t, os.Lchown(dir, w.uid, w.uid))
	w = withRunner(t, w, execsandbox.Config{UnixSocketPaths: []string{named.Path}})

	res := w.run(t, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "first", named.Path, other.Path)+
		"; mv "+dir+" "+dir+"-old && mkdir "+dir+" && ln -s "+other.Path+" "+named.Path)
	got := connected(res.Stdout.Text)
	assert.Equal(t, "OK pong first", got[named.Path], res.Stderr.Text)
	assert.NotContains(t, got[other.Path], "OK", res.Stdout.Text)
	target, err := os.Readlink(named.Path)
	require.NoError(t, err, "the swap was made: %s", res.Stderr.Text)
	require.Equal(t, other.Path, target)

	res = w.run(t, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "second", named.Path, other.Path))
	got = connected(res.Stdout.Text)
	assert.NotContains(t, got[named.Path], "OK", res.Stdout.Text)
	assert.NotContains(t, got[other.Path], "OK", res.Stdout.Text)
	n, lines := other.Accepted()
	assert.Zero(t, n, "the other listener accepted %v", lines)
	assert.Equal(t, 1, accepted(named))
	require.NotNil(t, res.Confinement)
	assert.Empty(t, res.Confinement.UnixSocketPaths, "the name grants nothing once it is reached through a symlink")
}

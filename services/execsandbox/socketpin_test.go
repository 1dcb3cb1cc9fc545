//go:build linux

package execsandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
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
	require.NoError(t, chownTo(dir, w.uid))
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

// TestUnixSocketDirectoryRenamed (review of issue 24, F2): a host socket in
// a writable root stays masked once its directory was renamed (so
// /proc/net/unix names a path that no longer exists): a command cannot
// rename it (pinned), a process outside can, and the next command finds
// it by walking the writable roots; the listener accepts nothing. A named
// socket under /var/tmp keeps AF_UNIX open.
func TestUnixSocketDirectoryRenamed(t *testing.T) {
	perl := fixtures.Perl(t)
	if subproc.Probe().ResolveUnix {
		t.Skip("Landlock ABI 9 limits connects by itself; the masks are not used")
	}
	w := newWorld(t, primaryOwner(), exec.Config{}, nil)
	out := fixtures.OutsideDir(t)
	require.NoError(t, os.Chmod(out, 0o755))
	named := fixtures.ListenUnix(t, filepath.Join(out, "agent.sock"))
	dir := filepath.Join(w.cache, "tmux-like")
	require.NoError(t, os.Mkdir(dir, 0o700))
	host := fixtures.ListenUnix(t, filepath.Join(dir, "default"))
	require.NoError(t, chownTo(dir, w.uid))
	w = withRunner(t, w, execsandbox.Config{UnixSocketPaths: []string{named.Path}})

	moved := filepath.Join(w.cache, "tmux-moved", "default")
	res := w.run(t, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "first", host.Path, named.Path)+
		"; mv "+dir+" "+filepath.Dir(moved))
	got := connected(res.Stdout.Text)
	assert.Equal(t, "FAIL Connection refused", got[host.Path], res.Stdout.Text+res.Stderr.Text)
	assert.Equal(t, "OK pong first", got[named.Path], res.Stderr.Text)
	// The socket's directory is pinned in the command's view: the command
	// cannot rename it (review of issue 36). A process outside can.
	assert.Contains(t, res.Stderr.Text, "Device or resource busy")
	require.NoError(t, os.Rename(dir, filepath.Dir(moved)))
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(moved, &st))
	require.Equal(t, uint32(unix.S_IFSOCK), st.Mode&unix.S_IFMT)

	res = w.run(t, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "second", moved, named.Path))
	got = connected(res.Stdout.Text)
	assert.Equal(t, "FAIL Connection refused", got[moved], res.Stdout.Text+res.Stderr.Text)
	assert.Equal(t, "OK pong second", got[named.Path], res.Stderr.Text)
	n, lines := host.Accepted()
	assert.Zero(t, n, "the renamed socket accepted %v", lines)
	assert.Equal(t, 2, accepted(named))
}

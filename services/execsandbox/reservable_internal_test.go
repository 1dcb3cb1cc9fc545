//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestReservable (issue 34, the attack review's inputs): the paths a
// command may never create are a workspace root's top-level `.git` and
// host-run files, the host-run files but the root-only HEAD in a home that
// lies beneath a workspace root (not one above it, nor the root itself,
// nor one in a temp root), and $XDG_CONFIG_HOME's git and fish beneath a
// workspace root; none twice.
func TestReservable(t *testing.T) {
	protect, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{
		Unprotect: names(sandbox.HostRunFiles(), ".mcp.json", ".bashrc", ".config/git", "HEAD"), ConfigHome: "/w/cfg",
	})
	require.NoError(t, err)
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/w", OtherRoots: []string{"/o"}, TempRoots: []string{"/tmp"}}
	got := reservable(policy, protect, []string{"/w/home/u", "/w", "/", "/tmp/h", "/w/home/u"})
	assert.Equal(t, []string{
		"/w/.git", "/w/.mcp.json", "/w/.config/git", "/w/.bashrc", "/w/HEAD",
		"/w/home/u/.mcp.json", "/w/home/u/.config/git", "/w/home/u/.bashrc",
		"/w/cfg/git",
		"/o/.git", "/o/.mcp.json", "/o/.config/git", "/o/.bashrc", "/o/HEAD",
	}, got)
}

// names returns the names of all but keep.
func names(all []sandbox.HostRun, keep ...string) []string {
	var out []string
	for _, h := range all {
		if !slices.Contains(keep, h.Name) {
			out = append(out, h.Name)
		}
	}
	return out
}

// TestReserveAbove (issue 34, the attack review's inputs): above a nested
// reserved name, a missing directory is reserved; one this server's user
// cannot make (a directory not its own to write: /proc here) needs nothing,
// and the command starts; a regular file in the way is pinned with its
// identity (a command could remove it and make the directory); a dangling
// symlink's missing target in the workspace is reserved; another symlink
// leaves the name to be reserved through it; nothing fails.
func TestReserveAbove(t *testing.T) {
	ws := t.TempDir()
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}
	h, covered, pin, err := reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, new([]string))
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.True(t, covered)
	assert.Nil(t, pin)
	assert.Equal(t, filepath.Join(ws, ".config"), h.Path)
	subproc.ReleaseAll(h)
	assert.NoDirExists(t, filepath.Join(ws, ".config"))

	proc := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/proc"}
	h, covered, pin, err = reserveAbove(proc, "/proc/.config/git", map[string]bool{}, new([]string))
	require.NoError(t, err, "a directory this user cannot make refuses no command")
	assert.Nil(t, h)
	assert.True(t, covered)
	assert.Nil(t, pin)

	require.NoError(t, os.WriteFile(filepath.Join(ws, ".config"), []byte("x"), 0o644))
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(ws, ".config"), &st))
	h, covered, pin, err = reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, new([]string))
	require.NoError(t, err)
	assert.Nil(t, h)
	assert.True(t, covered)
	require.NotNil(t, pin)
	assert.Equal(t, sandboxpolicy.ProtectedEntry{Path: filepath.Join(ws, ".config"), Dev: dirfd.Dev(&st), Ino: st.Ino}, *pin)

	// A dangling link into the workspace: its missing target is reserved
	// (a command could make it, and git/ in it, through the link).
	require.NoError(t, os.Remove(filepath.Join(ws, ".config")))
	require.NoError(t, os.Symlink("dots/config", filepath.Join(ws, ".config")))
	require.NoError(t, os.Mkdir(filepath.Join(ws, "dots"), 0o755))
	h, covered, pin, err = reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, new([]string))
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.True(t, covered)
	assert.Nil(t, pin)
	assert.Equal(t, filepath.Join(ws, "dots/config"), h.Path)
	subproc.ReleaseAll(h)
	// A link to an existing directory, or out of the roots: the name is
	// reserved through it.
	for _, target := range []string{"dots", t.TempDir(), "/nonexistent-36/config"} {
		require.NoError(t, os.Remove(filepath.Join(ws, ".config")))
		require.NoError(t, os.Symlink(target, filepath.Join(ws, ".config")))
		h, covered, pin, err = reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, new([]string))
		require.NoError(t, err, target)
		assert.Nil(t, h, target)
		assert.False(t, covered, "reserved through the link, as before")
		assert.Nil(t, pin)
	}
	// A loop of links ends.
	require.NoError(t, os.Remove(filepath.Join(ws, ".config")))
	require.NoError(t, os.Symlink(".config", filepath.Join(ws, ".config")))
	_, _, _, err = reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, new([]string))
	require.NoError(t, err)
}

//go:build linux

package execsandbox

import (
	"fmt"
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
// host-run files (a home's own, `.bashrc`, only at a root that is a home;
// git's everywhere), the host-run files but the root-only HEAD in a home that
// lies beneath a workspace root (not one above it, nor the root itself,
// nor one in a temp root), and $XDG_CONFIG_HOME's git and fish beneath a
// workspace root; none twice.
func TestReservable(t *testing.T) {
	protect, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{
		Unprotect: names(sandbox.HostRunFiles(), ".mcp.json", ".bashrc", ".config/git", "HEAD"), ConfigHome: "/w/cfg",
	})
	require.NoError(t, err)
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/w", OtherRoots: []string{"/o"}, TempRoots: []string{"/tmp"}}
	got := sandboxpolicy.Reservable(policy, protect, []string{"/w/home/u", "/w", "/", "/tmp/h", "/w/home/u"})
	assert.Equal(t, []string{
		"/w/.git", "/w/.mcp.json", "/w/.config/git", "/w/.bashrc", "/w/HEAD",
		"/w/home/u/.mcp.json", "/w/home/u/.config/git", "/w/home/u/.bashrc",
		"/w/cfg/git",
		"/o/.git", "/o/.mcp.json", "/o/.config/git", "/o/HEAD", // /o is no home: no .bashrc
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
// symlink's missing target in the workspace is reserved; a symlink to a
// directory of the workspace, relative or absolute, leaves the name to be
// reserved at the path it resolves to; one out of the roots covers it and
// nothing is made out there, unless it leads, or dangles, back into the
// workspace (through a chain of ten, a `..` after a link: the review's
// inputs); a loop, or a link through /proc, refuses the command.
func TestReserveAbove(t *testing.T) {
	ws := t.TempDir()
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}
	reserve := func(policy sandbox.ExecutionPolicy, p string) above {
		t.Helper()
		a, err := reserveAbove(policy, p, map[string]bool{}, new([]string))
		require.NoError(t, err, p)
		return a
	}
	a := reserve(policy, filepath.Join(ws, ".config/git"))
	require.NotNil(t, a.held)
	assert.True(t, a.covered)
	assert.Nil(t, a.pin)
	assert.Equal(t, filepath.Join(ws, ".config"), a.held.Path)
	subproc.ReleaseAll(a.held)
	assert.NoDirExists(t, filepath.Join(ws, ".config"))

	proc := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/proc"}
	assert.Equal(t, above{covered: true}, reserve(proc, "/proc/.config/git"), "a directory this user cannot make refuses no command")

	require.NoError(t, os.WriteFile(filepath.Join(ws, ".config"), []byte("x"), 0o644))
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(ws, ".config"), &st))
	a = reserve(policy, filepath.Join(ws, ".config/git"))
	assert.Nil(t, a.held)
	assert.True(t, a.covered)
	require.NotNil(t, a.pin)
	assert.Equal(t, sandboxpolicy.ProtectedEntry{Path: filepath.Join(ws, ".config"), Dev: dirfd.Dev(&st), Ino: st.Ino}, *a.pin)

	// A dangling link into the workspace: its missing target is reserved
	// (a command could make it, and git/ in it, through the link).
	relink := func(target string) {
		t.Helper()
		require.NoError(t, os.Remove(filepath.Join(ws, ".config")))
		require.NoError(t, os.Symlink(target, filepath.Join(ws, ".config")))
	}
	relink("dots/config")
	require.NoError(t, os.Mkdir(filepath.Join(ws, "dots"), 0o755))
	a = reserve(policy, filepath.Join(ws, ".config/git"))
	require.NotNil(t, a.held)
	assert.True(t, a.covered)
	assert.Nil(t, a.pin)
	assert.Equal(t, filepath.Join(ws, "dots/config"), a.held.Path)
	subproc.ReleaseAll(a.held)
	// A link to an existing directory of the workspace, relative or
	// absolute: the name is reserved there, at a path without the link
	// (bubblewrap cannot bind through an absolute one).
	for _, target := range []string{"dots", filepath.Join(ws, "dots")} {
		relink(target)
		assert.Equal(t, above{at: filepath.Join(ws, "dots/git")}, reserve(policy, filepath.Join(ws, ".config/git")), target)
	}
	// A link out of the roots: nothing to reserve (read-only in the
	// view), nothing made there; unless it leads back in, or dangles
	// back in.
	out := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(ws, "dots"), filepath.Join(out, "back")))
	require.NoError(t, os.Symlink(filepath.Join(ws, "dots/missing"), filepath.Join(out, "dangling")))
	for target, want := range map[string]above{
		out:                            {covered: true},
		"/nonexistent-36/config":       {covered: true},
		filepath.Join(out, "back"):     {at: filepath.Join(ws, "dots/git")},
		filepath.Join(out, "back/a/b"): {covered: true, held: &subproc.Reservation{}},
		filepath.Join(out, "dangling"): {covered: true, held: &subproc.Reservation{}},
	} {
		relink(target)
		a = reserve(policy, filepath.Join(ws, ".config/git"))
		if want.held != nil {
			require.NotNil(t, a.held, target)
			assert.True(t, dirfd.Beneath(filepath.Join(ws, "dots"), a.held.Path), "%s: %s reserved in the workspace", target, a.held.Path)
			subproc.ReleaseAll(a.held)
			continue
		}
		assert.Equal(t, want, a, target)
		entries, err := os.ReadDir(out)
		require.NoError(t, err)
		assert.Len(t, entries, 2, "nothing made out of the roots")
	}
	// The review's routes back in: a chain of ten links (eight were
	// followed), a `..` after a link (beside the link's target, not
	// cleaned away).
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "deep/dir"), 0o755))
	require.NoError(t, os.Symlink("deep/dir", filepath.Join(ws, "l2")))
	for i := 1; i < 10; i++ {
		require.NoError(t, os.Symlink(fmt.Sprintf("c%d", i+1), filepath.Join(ws, fmt.Sprintf("c%d", i))))
	}
	require.NoError(t, os.Symlink("dots", filepath.Join(ws, "c10")))
	for target, want := range map[string]string{
		"c1":       filepath.Join(ws, "dots/git"),
		"l2/../ev": filepath.Join(ws, "deep/ev/git"),
	} {
		relink(target)
		links := []string{}
		a, err := reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, &links)
		require.NoError(t, err, target)
		if a.held != nil {
			assert.Equal(t, filepath.Dir(want), a.held.Path, target)
			subproc.ReleaseAll(a.held)
		} else {
			assert.Equal(t, above{at: want}, a, target)
		}
		assert.Contains(t, links, filepath.Join(ws, ".config"), target)
	}
	// A link through /proc refuses the command: where /proc/self/cwd
	// leads depends on the process reading it (the second review made the
	// host's git read a command's config through it).
	for _, target := range []string{"/proc/self/root" + filepath.Join(ws, "dots"), "/proc/self/cwd/dots"} {
		relink(target)
		_, err := reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, new([]string))
		require.ErrorContains(t, err, "leads through /proc", target)
	}
	// A loop of links refuses the command, as do more links on the way
	// than the kernel follows.
	relink(".config")
	_, err := reserveAbove(policy, filepath.Join(ws, ".config/git"), map[string]bool{}, new([]string))
	require.ErrorContains(t, err, "more than 40 symlinks")
}

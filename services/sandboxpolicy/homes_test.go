//go:build linux

package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/sandbox"
)

// TestReservableInEveryHome (the attack review of issue 34): a workspace
// root that is a home by any account's record (/root, whatever the
// server's $HOME: `sudo -E`), or $ZDOTDIR, has its shells' start-up files
// reserved; a root that is no home has git's reserved, not the shells'.
func TestReservableInEveryHome(t *testing.T) {
	protect, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{})
	assert.NoError(t, err)
	rootHome := filepath.Clean(CanonicalPath("/root"))
	if _, err := os.Stat(rootHome); err != nil || !slices.Contains(first(accountHomes()), rootHome) {
		t.Skip("no /root in /etc/passwd here")
	}
	zdot := t.TempDir()
	t.Setenv("ZDOTDIR", zdot)
	plain := t.TempDir()
	for _, c := range []struct {
		root   string
		shells bool
	}{{rootHome, true}, {zdot, true}, {plain, false}} {
		got := Reservable(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: c.root}, protect, []string{"/nonexistent-home"})
		assert.Equal(t, c.shells, slices.Contains(got, filepath.Join(c.root, ".bash_profile")), c.root)
		assert.Equal(t, c.shells, slices.Contains(got, filepath.Join(c.root, ".zshenv")), c.root)
		assert.True(t, slices.Contains(got, filepath.Join(c.root, ".gitconfig")), c.root)
		assert.True(t, slices.Contains(got, filepath.Join(c.root, ".config/git")), c.root)
	}
}

// TestLinkedDenial: what a link in a deny-read directory leads to is
// denied beneath a home or a root, never `/`, a home, what holds one, nor
// what lies elsewhere (the attack review's link to /usr).
func TestLinkedDenial(t *testing.T) {
	roots, homes := []string{"/h/u/ws", "/srv/w"}, []string{"/h/u"}
	for target, want := range map[string]bool{
		"/h/u/dotfiles/id": true, "/h/u/ws/keys": true, "/srv/w/k": true,
		"/": false, "/h/u": false, "/h": false, "/h/u/ws": false, "/srv": false,
		"/usr": false, "/usr/lib/os-release": false, "/etc/ssl": false, "/h/other/id": false,
	} {
		assert.Equal(t, want, LinkedDenial(target, roots, homes), target)
	}
}

func first(homes []string, _ []os.FileInfo) []string { return homes }

// TestReservableZDOTDIRAndBoundHome (the second attack review of issue 34):
// a $ZDOTDIR beneath a workspace root (a dotfiles workspace holding zsh/)
// has zsh's start-up files reserved; and a home reached through a bind
// mount (root only: the mount) is a home.
func TestReservableZDOTDIRAndBoundHome(t *testing.T) {
	protect, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{})
	require.NoError(t, err)
	ws := filepath.Clean(CanonicalPath(t.TempDir()))
	zdot := filepath.Join(ws, "zsh")
	require.NoError(t, os.Mkdir(zdot, 0o755))
	t.Setenv("ZDOTDIR", zdot)
	got := Reservable(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}, protect, nil)
	for _, name := range []string{".zshrc", ".zshenv", ".zprofile"} {
		assert.Contains(t, got, filepath.Join(zdot, name))
	}
	t.Setenv("ZDOTDIR", "")

	if os.Geteuid() != 0 {
		t.Skip("a bind mount needs root")
	}
	home, bound := t.TempDir(), filepath.Join(ws, "bound")
	require.NoError(t, os.Mkdir(bound, 0o755))
	require.NoError(t, unix.Mount(home, bound, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(bound, unix.MNT_DETACH) })
	got = Reservable(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: bound}, protect, []string{filepath.Clean(CanonicalPath(home))})
	assert.Contains(t, got, filepath.Join(bound, ".bash_profile"), "a bind mount of a home is a home")
}

package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

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
	if _, err := os.Stat(rootHome); err != nil || !slices.Contains(accountHomes(), rootHome) {
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

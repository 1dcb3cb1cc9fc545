//go:build linux

package execsandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGitStatesBoundPerDirectory (issue 34's review of bounds over all
// directories): a git directory a command filled with more directories
// below modules/ than one walk reads, sorting first, leaves the next git
// directory's submodule's rebase todo found (the bound is each git
// directory's own),
// and the walk says it stopped short.
func TestGitStatesBoundPerDirectory(t *testing.T) {
	base := t.TempDir()
	full, victim := filepath.Join(base, "a/.git"), filepath.Join(base, "b/.git")
	for i := range gitStateWalkMax + 10 {
		require.NoError(t, os.MkdirAll(filepath.Join(full, "modules", fmt.Sprintf("m%d", i)), 0o755))
	}
	todo := filepath.Join(victim, "modules/sub/rebase-merge/git-rebase-todo")
	require.NoError(t, os.MkdirAll(filepath.Dir(todo), 0o755))
	require.NoError(t, os.WriteFile(todo, []byte("exec touch /tmp/PWNED\n"), 0o644))
	g := listGitStates([]string{full, victim})
	assert.True(t, g.short)
	assert.Contains(t, g.files, todo)
}

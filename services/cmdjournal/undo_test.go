package cmdjournal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/undo"
)

// TestUndoOfACommand: `harness undo` of a command's entry needs nothing
// special: it puts back the bytes and modes the command overwrote,
// chmodded and deleted (a whole tree, its symlink and directory modes),
// removes what it created, and leaves alone what was not journaled.
func TestUndoOfACommand(t *testing.T) {
	ws := fixture(t)
	st := newStore(t)
	j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
	require.NoError(t, err)
	snap, err := j.Begin("", []string{ws})
	require.NoError(t, err)
	sh(t, ws, "printf 'new a\\n' > a.txt && chmod 0700 b.sh && rm -rf tree && mkdir made && printf 'n\\n' > made/n.txt && echo l >> build.log")
	res, err := snap.End(Call{Session: "s1"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Entry.ID)

	done, err := undo.New(st).Undo(t.Context(), res.Entry.ID, undo.Options{})
	require.NoError(t, err)
	assert.Equal(t, res.Entry.ID, done.Undo.Undoes)

	for rel, want := range map[string]struct {
		mode    os.FileMode
		content string
	}{
		"a.txt": {0o644, "old a\n"}, "b.sh": {0o644, "echo b\n"}, "tree/x": {0o644, "x content\n"}, "tree/sub/y": {0o644, "y content\n"},
	} {
		p := filepath.Join(ws, rel)
		b, err := os.ReadFile(p)
		require.NoError(t, err, rel)
		assert.Equal(t, want.content, string(b), rel)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.Equal(t, want.mode, fi.Mode().Perm(), rel)
	}
	fi, err := os.Lstat(filepath.Join(ws, "tree/sub"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	target, err := os.Readlink(filepath.Join(ws, "tree/link"))
	require.NoError(t, err)
	assert.Equal(t, "a.txt", target)
	assert.NoDirExists(t, filepath.Join(ws, "made"))
	log, err := os.ReadFile(filepath.Join(ws, "build.log"))
	require.NoError(t, err)
	assert.Equal(t, secret+"\nl\n", string(log), "a gitignored file is not journaled: undo leaves it")
}

package compose_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/session"
)

// --journal-max-bytes opens the journal in $XDG_STATE_HOME/harness/journal
// (0700), synced at full durability, and the file tools journal through
// it: a write over a file keeps its prior content. With 0 there is none.
func TestGraphJournal(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	d := newDirs(t)
	require.NoError(t, os.WriteFile(filepath.Join(d.ws, "a.txt"), []byte("before\n"), 0o600))
	var in struct {
		fx.In
		Backend fslocal.Config
		Journal *journal.Journal
	}
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Mode: "workspace-write", Workspace: d.ws, TempRoots: []string{d.temp}, Durability: "full", JournalMaxBytes: 1 << 20,
		LogLevel: "info", LogFormat: "console",
	}, fx.Populate(&in))
	dir := filepath.Join(state, "harness", "journal")
	assert.Equal(t, dir, in.Journal.Dir())
	assert.Equal(t, int64(1<<20), in.Journal.MaxBytes())
	assert.Same(t, in.Journal, in.Backend.Journal)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	sess := session.New("s-journal", d.ws)
	r := call(t, sess, tools["read"], map[string]any{"file_path": "a.txt"})
	require.False(t, r.IsError, r.Text)
	r = call(t, sess, tools["write"], map[string]any{"file_path": "a.txt", "content": "after\n"})
	require.False(t, r.IsError, r.Text)
	entries, err := in.Journal.List(journal.ListOptions{})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, journal.Applied, entries[0].Status)
	assert.Equal(t, "write", entries[0].Tool)
	rc, _, err := in.Journal.OpenBlob(entries[0].Before[0].Hash)
	require.NoError(t, err)
	_ = rc.Close()
	app.RequireStop()

	var off struct {
		fx.In
		Backend fslocal.Config
		Journal *journal.Journal `optional:"true"`
	}
	_, app = toolsByName(t, config.Config{
		FS: "sandbox", Mode: "workspace-write", Workspace: d.ws, TempRoots: []string{d.temp}, LogLevel: "info", LogFormat: "console",
	}, fx.Populate(&off))
	defer app.RequireStop()
	assert.Nil(t, off.Journal)
	assert.Nil(t, off.Backend.Journal)
}

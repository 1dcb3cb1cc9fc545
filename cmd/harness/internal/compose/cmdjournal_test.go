package compose_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/cmdjournal"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/session"
)

// TestGraphJournalCommands: with --journal-commands the exec tool journals
// what a command changed into the server's journal (in the state
// directory), so the entry lists the file the command overwrote; without
// it no Journaler is composed and the command leaves no entry.
func TestGraphJournalCommands(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			state := t.TempDir()
			t.Setenv("XDG_STATE_HOME", state)
			d := newDirs(t)
			require.NoError(t, os.WriteFile(filepath.Join(d.ws, "a.txt"), []byte("old\n"), 0o644))
			var got struct {
				fx.In
				J *cmdjournal.Journaler `optional:"true"`
			}
			tools, app := toolsByName(t, config.Config{
				FS: "local", Mode: "danger-full-access", Exec: "local", Workspace: d.ws, Durability: "full",
				JournalMaxBytes: 1 << 20, JournalCommands: on, LogLevel: "info", LogFormat: "console",
			}, fx.Populate(&got))
			defer app.RequireStop()
			assert.Equal(t, on, got.J != nil)

			r := call(t, session.New("s", d.ws), tools["exec"], map[string]any{"command": "printf 'new\\n' > a.txt"})
			require.False(t, r.IsError, r.Text)

			j, err := journal.Open(journal.Options{Dir: filepath.Join(state, "harness", "journal"), MaxBytes: 1 << 20})
			require.NoError(t, err)
			defer func() { _ = j.Close() }()
			entries, err := j.List(journal.ListOptions{})
			require.NoError(t, err)
			if !on {
				assert.Empty(t, entries)
				return
			}
			require.Len(t, entries, 1)
			assert.Equal(t, journal.Command, entries[0].Kind)
			assert.Equal(t, []string{filepath.Join(d.ws, "a.txt")}, entries[0].Paths)
		})
	}
}

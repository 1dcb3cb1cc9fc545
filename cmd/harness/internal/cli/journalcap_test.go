package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/journal"
)

// TestUndoAfterTheJournalCap: a session deletes src/ recursively, then a
// session writes large files (each overwritten, so the journal keeps the
// prior content) until the journal's cap is reached. Written by the same
// session, the write that would push the delete out is refused with
// FS_JOURNAL_FULL and changes nothing, and `harness undo` of the delete
// restores src/ byte for byte. Written by another session, the delete is
// dropped (that session is refused later, for its own changes): history
// says "dropped" (in the table and in --json), and undo refuses with
// JOURNAL_DROPPED, nothing changed.
func TestUndoAfterTheJournalCap(t *testing.T) {
	tests := []struct {
		name    string
		flooder string // the session of the large writes
		kept    bool   // whether the delete stays undoable
	}{
		{"the same session's writes are refused", "agent-1", true},
		{"another session's writes drop it, and history says so", "agent-2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			// data.txt takes the delete past the segment's soft size (128 KiB):
			// the next change starts a segment of its own.
			fixture.Build(t, l.ws, "src/main.go: package main\n", "src/lib/x.go: package lib\n", "src/lib/data.txt: "+strings.Repeat("data ", 40000), "src/empty/")
			prior := fixture.Snapshot(t, filepath.Join(l.ws, "src"))
			journalDir := filepath.Join(l.base, "journal")
			j, err := journal.Open(journal.Options{Dir: journalDir, MaxBytes: 1 << 20, Sync: true})
			require.NoError(t, err)
			f, err := fslocal.New(fslocal.Config{Cwd: l.ws, Journal: j}, nil)
			require.NoError(t, err)
			call := func(session string) context.Context {
				return audit.NewContext(context.Background(), audit.Open(audit.Record{Session: session, Tool: "tool"}))
			}
			tg := func(ctx context.Context, p string) fs.Target {
				tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
				require.NoError(t, err)
				return tg
			}
			ctx := call("agent-1")
			_, err = f.Remove(ctx, tg(ctx, "src"), fs.RemoveOptions{Recursive: true})
			require.NoError(t, err)
			entries, err := j.List(journal.ListOptions{})
			require.NoError(t, err)
			require.Len(t, entries, 1)
			del := entries[0].ID

			flood := call(tt.flooder)
			var refused error
			for i := range 40 {
				name := fmt.Sprintf("big-%02d.txt", i)
				for v := range 2 {
					content := strings.Repeat(fmt.Sprintf("%d.%d ", i, v), 60000) // ~300 KB
					before, _ := os.ReadFile(filepath.Join(l.ws, name))
					_, err := f.WriteText(flood, tg(flood, name), content, fs.WriteOptions{})
					if err != nil {
						refused = err
						after, rerr := os.ReadFile(filepath.Join(l.ws, name))
						if v == 0 {
							assert.True(t, errors.Is(rerr, os.ErrNotExist), "the refused write created nothing")
						} else {
							require.NoError(t, rerr)
							assert.Equal(t, before, after, "the refused write changed nothing")
						}
						break
					}
				}
				if refused != nil {
					break
				}
			}
			require.NoError(t, j.Close())

			// Either way the writer is refused at last, for its own
			// earlier changes: the same session's for the delete.
			require.Error(t, refused, "the journal's cap is reached")
			var fe *fs.Error
			require.True(t, errors.As(refused, &fe), "%v", refused)
			assert.Equal(t, fs.CodeJournalFull, fe.Code)
			assert.Equal(t, tt.kept, strings.Contains(fe.Error(), del), fe.Error())

			r := runCLI(t, []string{"history", "--json", "--journal", journalDir}, "", false, nil)
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			var found bool
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var e journal.Entry
				require.NoError(t, json.Unmarshal([]byte(line), &e))
				if e.Dropped {
					assert.Equal(t, journal.Dropped, e.Status, "a dropped entry says dropped, not %s", e.Status)
				} else {
					assert.Equal(t, journal.Applied, e.Status, e.ID)
				}
				if e.ID == del {
					found = true
					assert.Equal(t, !tt.kept, e.Dropped)
				}
			}
			require.True(t, found, "the delete is listed")
			r = runCLI(t, []string{"history", "--journal", journalDir}, "", false, nil)
			for _, line := range strings.Split(r.stdout, "\n") {
				assert.NotContains(t, line, "pending")
				if strings.HasPrefix(line, del) {
					assert.Equal(t, !tt.kept, strings.Contains(line, "dropped"), line)
				}
			}

			r = runCLI(t, []string{"undo", del, "--journal", journalDir}, "", false, nil)
			if tt.kept {
				require.Equal(t, cli.ExitOK, r.code, r.stderr)
				assert.Equal(t, prior, fixture.Snapshot(t, filepath.Join(l.ws, "src")), "src/ restored byte for byte")
			} else {
				assert.Equal(t, cli.ExitToolError, r.code)
				assert.Contains(t, r.stderr, "JOURNAL_DROPPED")
				_, err := os.Stat(filepath.Join(l.ws, "src"))
				assert.True(t, errors.Is(err, os.ErrNotExist), "nothing changed")
			}
		})
	}
}

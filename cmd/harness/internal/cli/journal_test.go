package cli_test

import (
	"context"
	"encoding/json"
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

// agentSession makes the changes an agent's session makes through the file
// tools' backend, journaled in the state directory's journal: an edit, a
// new file, a move, a mkdir and a recursive delete of src/.
func agentSession(t *testing.T, ws, journalDir, session string) {
	t.Helper()
	j, err := journal.Open(journal.Options{Dir: journalDir, MaxBytes: 64 << 20, Sync: true})
	require.NoError(t, err)
	defer j.Close() //nolint:errcheck // test
	f, err := fslocal.New(fslocal.Config{Cwd: ws, Journal: j}, nil)
	require.NoError(t, err)
	ctx := audit.NewContext(context.Background(), audit.Open(audit.Record{Session: session, Client: "test-agent", Tool: "tool"}))
	tg := func(p string) fs.Target {
		tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
		require.NoError(t, err)
		return tg
	}
	_, err = f.EditText(ctx, tg("a.txt"), fs.EditRequest{OldString: "hello", NewString: "goodbye"})
	require.NoError(t, err)
	_, err = f.WriteText(ctx, tg("notes.txt"), "agent's notes\n", fs.WriteOptions{Intent: fs.WriteIntent{Kind: fs.CreateIfAbsent}})
	require.NoError(t, err)
	_, err = f.Move(ctx, tg("b.txt"), tg("c.txt"), fs.MoveOptions{})
	require.NoError(t, err)
	_, err = f.Mkdir(ctx, tg("build"), fs.MkdirOptions{})
	require.NoError(t, err)
	_, err = f.Remove(ctx, tg("src"), fs.RemoveOptions{Recursive: true})
	require.NoError(t, err)
}

// An agent's session, listed by `harness history` and taken back by
// `harness undo --session`: refused (nothing changed) while a path holds a
// later edit, then restored byte for byte; the undo can be undone.
func TestHistoryAndUndo(t *testing.T) {
	l := newLayout(t)
	fixture.Build(t, l.ws, "b.txt: bee", "src/main.go: package main\n", "src/lib/x.go: package lib\n", "src/empty/", "src/link => main.go")
	require.NoError(t, os.Chmod(filepath.Join(l.ws, "src/main.go"), 0o600))
	state := filepath.Join(l.base, "state")
	t.Setenv("XDG_STATE_HOME", state) // the server's journal: journal.DefaultDir
	var vars map[string]string
	journalDir := filepath.Join(state, "harness", "journal")
	prior := fixture.Snapshot(t, l.ws)
	agentSession(t, l.ws, journalDir, "agent-1")
	changed := fixture.Snapshot(t, l.ws)
	require.NotEqual(t, prior, changed)

	t.Run("history lists each change, from the state directory's journal", func(t *testing.T) {
		r := runCLI(t, []string{"history"}, "", false, vars)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 6, r.stdout)
		assert.Regexp(t, `^ID\s+TIME\s+SESSION\s+TOOL\s+KIND\s+PATH\s+BYTES\s+STATUS$`, lines[0])
		for i, kind := range []string{"edit", "write", "move", "mkdir", "delete"} {
			assert.Regexp(t, `agent-1\s+tool\s+`+kind+`\s+.*applied$`, lines[i+1])
		}
		assert.Contains(t, lines[3], filepath.Join(l.ws, "b.txt")+" -> "+filepath.Join(l.ws, "c.txt"))
	})
	t.Run("history --json --session", func(t *testing.T) {
		r := runCLI(t, []string{"history", "--json", "--session", "agent-1", "--journal", journalDir}, "", false, nil)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 5)
		var e struct {
			journal.Entry
			UndoneBy string `json:"undone_by"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[4]), &e))
		assert.Equal(t, journal.Delete, e.Kind)
		assert.Equal(t, []string{filepath.Join(l.ws, "src")}, e.Paths)
		assert.Len(t, e.Before, 6, "the whole tree")
		r = runCLI(t, []string{"history", "--session", "other", "--journal", journalDir}, "", false, nil)
		assert.Equal(t, 1, strings.Count(r.stdout, "\n"), "only the header")
	})
	t.Run("a later edit refuses the whole session, nothing changed", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(l.ws, "c.txt"), []byte("user's edit"), 0o644))
		before := fixture.Snapshot(t, l.ws)
		r := runCLI(t, []string{"undo", "--session", "agent-1"}, "", false, vars)
		assert.Equal(t, cli.ExitToolError, r.code)
		assert.Contains(t, r.stderr, "JOURNAL_CHANGED_SINCE")
		assert.Contains(t, r.stderr, filepath.Join(l.ws, "c.txt"))
		assert.Equal(t, before, fixture.Snapshot(t, l.ws))
		require.NoError(t, os.WriteFile(filepath.Join(l.ws, "c.txt"), []byte("bee"), 0o644))
	})
	var undoOfEdit string
	t.Run("undo --session restores everything, newest first", func(t *testing.T) {
		r := runCLI(t, []string{"undo", "--session", "agent-1"}, "", false, vars)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		assert.Equal(t, prior, fixture.Snapshot(t, l.ws))
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 10, r.stdout)
		assert.Contains(t, lines[0], "(delete "+filepath.Join(l.ws, "src")+"): restored "+filepath.Join(l.ws, "src")+" and the 5 entries beneath it")
		assert.Contains(t, lines[4], "(move "+filepath.Join(l.ws, "b.txt")+" -> "+filepath.Join(l.ws, "c.txt")+"): moved back to "+filepath.Join(l.ws, "b.txt"))
		assert.Contains(t, lines[6], "(write "+filepath.Join(l.ws, "notes.txt")+"): removed "+filepath.Join(l.ws, "notes.txt"))
		assert.Contains(t, lines[8], "(edit "+filepath.Join(l.ws, "a.txt")+")")
		undoOfEdit = strings.Fields(lines[9])[2]
		undoOfEdit = strings.TrimSuffix(undoOfEdit, ":")
	})
	t.Run("history says undone by; a second undo skips them all", func(t *testing.T) {
		r := runCLI(t, []string{"history", "--session", "agent-1"}, "", false, vars)
		assert.Equal(t, 5, strings.Count(r.stdout, "undone by "), r.stdout)
		r = runCLI(t, []string{"undo", "--session", "agent-1"}, "", false, vars)
		assert.Equal(t, cli.ExitOK, r.code, r.stderr)
		assert.Equal(t, 5, strings.Count(r.stdout, "undone already by"), r.stdout)
		assert.Contains(t, r.stdout, "nothing to undo")
	})
	t.Run("the undo of the edit can be undone", func(t *testing.T) {
		r := runCLI(t, []string{"undo", undoOfEdit}, "", false, vars)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		b, err := os.ReadFile(filepath.Join(l.ws, "a.txt"))
		require.NoError(t, err)
		assert.Equal(t, "goodbye\nworld\n", string(b))
	})
	t.Run("refusals and usage", func(t *testing.T) {
		for _, c := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"no id nor session", []string{"undo"}, cli.ExitUsage, "undo takes one change ID or --session S"},
			{"both", []string{"undo", "x", "--session", "s"}, cli.ExitUsage, "undo takes one change ID or --session S"},
			{"unknown id", []string{"undo", "nope"}, cli.ExitToolError, "JOURNAL_NOT_FOUND"},
			{"unknown session", []string{"undo", "--session", "nope"}, cli.ExitToolError, "JOURNAL_NOT_FOUND"},
			{"no journal there: history lists nothing", []string{"history", "--journal", filepath.Join(l.base, "none")}, cli.ExitOK, "no journal at"},
			{"no journal there: undo finds nothing", []string{"undo", "x", "--journal", filepath.Join(l.base, "none")}, cli.ExitToolError, "JOURNAL_NOT_FOUND"},
			{"bad --since", []string{"history", "--since", "yesterday"}, cli.ExitUsage, "--since"},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := fixture.Snapshot(t, l.ws)
				r := runCLI(t, c.args, "", false, vars)
				assert.Equal(t, c.code, r.code, r.stderr)
				assert.Contains(t, r.stderr, c.want)
				assert.Equal(t, before, fixture.Snapshot(t, l.ws))
			})
		}
		_, err := os.Stat(filepath.Join(l.base, "none"))
		assert.ErrorIs(t, err, os.ErrNotExist, "a reader makes no journal")
	})
	t.Run("a change a one-shot call makes is journaled and undone", func(t *testing.T) {
		r := runCLI(t, []string{"call", "write", "--mode", "workspace-write", "--workspace", l.ws, "--arg", "file_path=a.txt", "--arg", "content=by call\n"}, "", false, vars)
		require.Equal(t, cli.ExitOK, r.code, r.stdout+r.stderr)
		r = runCLI(t, []string{"history", "--json"}, "", false, vars)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		var e journal.Entry
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &e))
		assert.Equal(t, "write", e.Tool)
		assert.Equal(t, []string{filepath.Join(l.ws, "a.txt")}, e.Paths)
		r = runCLI(t, []string{"undo", e.ID}, "", false, vars)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		b, err := os.ReadFile(filepath.Join(l.ws, "a.txt"))
		require.NoError(t, err)
		assert.Equal(t, "goodbye\nworld\n", string(b), "back to what the undone undo left")
	})
	t.Run("--since keeps the recent ones", func(t *testing.T) {
		r := runCLI(t, []string{"history", "--since", "1h"}, "", false, vars)
		assert.Equal(t, 14, strings.Count(r.stdout, "\n"), r.stdout)
		r = runCLI(t, []string{"history", "--since", "2999-01-01T00:00:00Z"}, "", false, vars)
		assert.Equal(t, 1, strings.Count(r.stdout, "\n"), r.stdout)
	})
}

// A file name with a terminal escape, a newline and a right-to-left
// override is shown escaped by `harness history` and `harness undo`: one
// line a change, no ESC, no newline, no bidi control on stdout.
func TestHistoryAndUndoEscapeNames(t *testing.T) {
	l := newLayout(t)
	name := "evil\x1b[2J\x1b[31mRED\x1b[0m\nFAKE  2026 x\u202egnp.exe"
	fixture.Build(t, l.ws, "keep.txt: k")
	require.NoError(t, os.WriteFile(filepath.Join(l.ws, name), []byte("x"), 0o644))
	journalDir := filepath.Join(l.base, "journal")
	j, err := journal.Open(journal.Options{Dir: journalDir, MaxBytes: 64 << 20, Sync: true})
	require.NoError(t, err)
	f, err := fslocal.New(fslocal.Config{Cwd: l.ws, Journal: j}, nil)
	require.NoError(t, err)
	ctx := audit.NewContext(context.Background(), audit.Open(audit.Record{Session: "s\x1b]0;t\a", Client: "c", Tool: "write"}))
	tg, err := f.Resolve(ctx, name, fs.ResolveOptions{})
	require.NoError(t, err)
	_, err = f.WriteText(ctx, tg, "y", fs.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	escaped := `evil\x1b[2J\x1b[31mRED\x1b[0m\nFAKE  2026 x\u202egnp.exe`
	clean := func(t *testing.T, out string) {
		t.Helper()
		for _, c := range []string{"\x1b", "\a", "\u202e", "\nFAKE"} {
			assert.NotContains(t, out, c)
		}
	}

	r := runCLI(t, []string{"history", "--journal", journalDir}, "", false, nil)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	clean(t, r.stdout)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 2, r.stdout)
	assert.Contains(t, lines[1], filepath.Join(l.ws, escaped))
	assert.Contains(t, lines[1], `s\x1b]0;t\a`)
	id := strings.Fields(lines[1])[0]

	require.NoError(t, os.WriteFile(filepath.Join(l.ws, name), []byte("user's"), 0o644))
	r = runCLI(t, []string{"undo", id, "--journal", journalDir}, "", false, nil)
	require.Equal(t, cli.ExitToolError, r.code, r.stdout)
	clean(t, r.stderr)
	assert.Contains(t, r.stderr, "JOURNAL_CHANGED_SINCE")
	assert.Contains(t, r.stderr, filepath.Join(l.ws, escaped))

	r = runCLI(t, []string{"undo", id, "--force", "--journal", journalDir}, "", false, nil)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	clean(t, r.stdout)
	assert.Contains(t, r.stdout, "(write "+filepath.Join(l.ws, escaped)+"): restored "+filepath.Join(l.ws, escaped))
	b, err := os.ReadFile(filepath.Join(l.ws, name))
	require.NoError(t, err)
	assert.Equal(t, "x", string(b), "the prior content is back on disk")
}

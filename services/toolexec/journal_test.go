package toolexec_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/cmdjournal"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
	"github.com/dsh-go/harness/services/undo"
)

// journaled is the command tools over the confining runner in a world of
// mode, with --journal-commands on (a journal outside the workspace).
type journaled struct {
	w     *world
	j     *journal.Journal
	tl    *toolexec.Tool
	tools map[string]*tool.Tool
	sess  *session.Session
	sink  *auSink
}

func newJournaled(t *testing.T, mode sandbox.Mode) *journaled {
	t.Helper()
	requireLandlock(t)
	w := newWorld(t, mode)
	j, err := journal.Open(journal.Options{Dir: filepath.Join(t.TempDir(), "journal"), MaxBytes: 1 << 30, Sync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	cj, err := cmdjournal.New(cmdjournal.Options{Journal: j, DenyRead: w.pol.DenyRead()})
	require.NoError(t, err)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, w.pol)
	require.NoError(t, err)
	sink := &auSink{}
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: w.pol, Commands: cj, Sink: sink})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tl.Close(context.Background())) })
	x := &journaled{w: w, j: j, tl: tl, tools: map[string]*tool.Tool{}, sess: session.NewTracker().Start("s", w.ws), sink: sink}
	for _, tt := range tl.All() {
		x.tools[tt.Name] = tt
	}
	return x
}

// call runs the tool name with args as call id of the session, and returns
// its result and the audit record the guard handed the sink.
func (x *journaled) call(t *testing.T, name, id string, args map[string]any) (tool.Result, audit.Record) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	res := x.tools[name].Handler(session.NewContext(t.Context(), x.sess), tool.Call{ID: id, Client: "test-client", Arguments: raw})
	return res, x.sink.last(t)
}

func (x *journaled) blob(t *testing.T, hash string) string {
	t.Helper()
	rc, _, err := x.j.OpenBlob(hash)
	require.NoError(t, err)
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// TestExecJournalsWhatTheCommandChanged: with --journal-commands, a
// confined command that overwrites, creates, deletes a tree and chmods
// leaves one journal entry for its call, and the call's record names it;
// undo of the entry puts back bytes and modes.
// The gitignored directory it writes a file in is listed as not journaled;
// its bytes,
// and the deny-read .env's (which a confined command cannot even read),
// never reach the journal.
func TestExecJournalsWhatTheCommandChanged(t *testing.T) {
	x := newJournaled(t, sandbox.WorkspaceWrite)
	ws := x.w.ws
	const secret = "SECRET-4d1e77"
	write(t, ws, map[string]string{
		"a.txt": "old a\n", "run.sh": "echo run\n", "tree/x": "x\n", "tree/deep/y": "y\n",
		".env": "TOKEN=" + secret + "\n", ".gitignore": "out/\n", "out/cache": secret + "\n",
	})

	res, rec := x.call(t, "exec", "call-1", map[string]any{
		"command": "printf 'new a\\n' > a.txt && chmod 0755 run.sh && rm -rf tree && printf 'made\\n' > made.txt && echo " + secret + " > out/made",
	})
	require.False(t, res.IsError, res.Text)
	require.NotNil(t, rec.Command)
	entries, err := x.j.List(journal.ListOptions{Session: "s"})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	e := entries[0]
	assert.Equal(t, e.ID+"; 1 changed path(s) not journaled (gitignored)", rec.Command.Journal)
	assert.Equal(t, journal.Command, e.Kind)
	assert.Equal(t, "exec", e.Tool)
	assert.Equal(t, "call-1", e.Call)
	assert.Equal(t, "test-client", e.Client)
	assert.Equal(t, journal.Applied, e.Status)
	in := func(rels ...string) []string {
		var out []string
		for _, r := range rels {
			out = append(out, filepath.Join(ws, r))
		}
		return out
	}
	assert.Equal(t, in("a.txt", "made.txt", "run.sh", "tree"), e.Paths)
	assert.Equal(t, in("out"), e.NotJournaled)
	before := map[string]journal.Node{}
	for _, n := range e.Before {
		before[n.Path] = n
	}
	assert.Equal(t, "old a\n", x.blob(t, before[filepath.Join(ws, "a.txt")].Hash))
	assert.Equal(t, "y\n", x.blob(t, before[filepath.Join(ws, "tree/deep/y")].Hash))
	assert.Equal(t, uint32(0o644), before[filepath.Join(ws, "run.sh")].Mode)
	after := map[string]journal.Node{}
	for _, n := range e.After {
		after[n.Path] = n
	}
	fi, err := os.Stat(filepath.Join(ws, "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, uint32(fi.Mode().Perm()), after[filepath.Join(ws, "run.sh")].Mode)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	assert.Equal(t, "made\n", x.blob(t, after[filepath.Join(ws, "made.txt")].Hash))
	assert.NotContains(t, after, filepath.Join(ws, "tree"), "the deleted tree has no After")

	// Undo of the entry puts the workspace back.
	_, err = undo.New(x.j).Undo(t.Context(), e.ID, undo.Options{})
	require.NoError(t, err)
	for rel, content := range map[string]string{"a.txt": "old a\n", "run.sh": "echo run\n", "tree/x": "x\n", "tree/deep/y": "y\n"} {
		b, err := os.ReadFile(filepath.Join(ws, rel))
		require.NoError(t, err, rel)
		assert.Equal(t, content, string(b), rel)
	}
	fi, err = os.Stat(filepath.Join(ws, "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	assert.NoFileExists(t, filepath.Join(ws, "made.txt"))

	names, err := os.ReadDir(x.j.Dir())
	require.NoError(t, err)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(x.j.Dir(), n.Name()))
		require.NoError(t, err)
		assert.NotContains(t, string(b), secret, n.Name())
	}
}

// TestExecJournalByMode: read-only writes nothing, so nothing is walked;
// a command that changes nothing records no entry and says so.
func TestExecJournalByMode(t *testing.T) {
	for _, tc := range []struct {
		mode    sandbox.Mode
		command string
		want    string
	}{
		{sandbox.ReadOnly, "true", "not journaled: read-only, the command writes nothing"},
		{sandbox.WorkspaceWrite, "cat a.txt", "no change in the journaled workspace"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			x := newJournaled(t, tc.mode)
			write(t, x.w.ws, map[string]string{"a.txt": "a\n"})
			res, rec := x.call(t, "exec", "c", map[string]any{"command": tc.command})
			require.False(t, res.IsError, res.Text)
			require.NotNil(t, rec.Command)
			assert.Equal(t, tc.want, rec.Command.Journal)
			entries, err := x.j.List(journal.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, entries)
		})
	}
}

// TestBackgroundCommandIsJournaledWhenItEnds: a background command's
// changes are journaled when it ends (here: exec_kill), under the call
// that started it.
func TestBackgroundCommandIsJournaledWhenItEnds(t *testing.T) {
	x := newJournaled(t, sandbox.WorkspaceWrite)
	write(t, x.w.ws, map[string]string{"a.txt": "old\n"})
	res, rec := x.call(t, "exec", "bg-call", map[string]any{
		"command": "printf 'new\\n' > a.txt; touch started; sleep " + marker(7), "background": true,
	})
	require.False(t, res.IsError, res.Text)
	id := res.Value.(toolexec.Started).ID
	require.NotNil(t, rec.Command)
	assert.Equal(t, "journaled when "+id+" ends, as the entry of call \"bg-call\"", rec.Command.Journal)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(x.w.ws, "started"))
		return err == nil
	}, bgWait, 20*time.Millisecond)
	entries, err := x.j.List(journal.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is recorded while it runs")

	kill, _ := x.call(t, "exec_kill", "kill-call", map[string]any{"id": id, "signal": "SIGKILL"})
	require.False(t, kill.IsError, kill.Text)
	entries, err = x.j.List(journal.ListOptions{})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	e := entries[0]
	assert.Equal(t, "bg-call", e.Call)
	assert.Equal(t, []string{filepath.Join(x.w.ws, "a.txt"), filepath.Join(x.w.ws, "started")}, e.Paths)
	i := slices.IndexFunc(e.Before, func(n journal.Node) bool { return n.Path == filepath.Join(x.w.ws, "a.txt") })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "old\n", x.blob(t, e.Before[i].Hash))
}

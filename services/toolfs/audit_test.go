//go:build linux

package toolfs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// auSecret is written by the calls of these tests: no record may hold it.
const auSecret = "AUDIT-SECRET-5c1e-MUST-NOT-BE-RECORDED"

// auSink keeps every record it is handed, in order.
type auSink struct {
	mu      sync.Mutex
	records []audit.Record
}

func (s *auSink) Append(r audit.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
}

// last returns the one record handed since the previous call of last, and
// asserts that no record holds the secret.
func (s *auSink) last(t *testing.T) audit.Record {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.records, 1, "one record per call")
	r := s.records[0]
	s.records = nil
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), auSecret, "no content in the record")
	assert.NotContains(t, string(raw), drKey, "no secret in the record")
	assert.NotContains(t, string(raw), drEnv, "no secret in the record")
	assert.False(t, r.Time.IsZero())
	assert.GreaterOrEqual(t, r.DurationMS, 0.0)
	return r
}

// auEnv is the tools over fssandbox in mode on a workspace beside an
// outside directory, recording into sink.
func auEnv(t *testing.T, w wrWorld, mode sandbox.Mode, approver sandbox.Approver) (*wrEnv, *auSink) {
	t.Helper()
	sink := &auSink{}
	return wrNew(t, wrSetup{Cwd: w.ws, Sandbox: wrSandboxCfg(mode, w.ws), Approver: approver, Bare: true, Sink: sink}), sink
}

// auCall runs tl as call 7 of client "test-client 1.0".
func auCall(t *testing.T, tl *tool.Tool, sess *session.Session, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Handler(session.NewContext(t.Context(), sess), tool.Call{ID: "7", Client: "test-client 1.0", Arguments: raw})
}

// TestAuditRecordsFileTools runs the file tools through the guard and reads
// each call's record back: who, what, the canonical paths, the mode, the
// decision and the outcome, and what is on disk.
func TestAuditRecordsFileTools(t *testing.T) {
	w := wrNewWorld(t)
	sess := session.New("sess-au", w.ws)

	t.Run("an allowed write records its path, mode and bytes", func(t *testing.T) {
		e, sink := auEnv(t, w, wrWW, nil)
		content := "hello " + auSecret + "\n"
		res := auCall(t, e.tools.Write(), sess, map[string]any{"file_path": "a.txt", "content": content})
		require.False(t, res.IsError, res.Text)
		got, err := os.ReadFile(filepath.Join(w.ws, "a.txt"))
		require.NoError(t, err)
		assert.Equal(t, content, string(got))
		r := sink.last(t)
		assert.Equal(t, audit.Record{
			Time: r.Time, Session: "sess-au", Client: "test-client 1.0", Tool: "write", Call: "7",
			Mode: "workspace-write", Paths: []string{filepath.Join(w.ws, "a.txt")},
			Decision: audit.Allowed, Outcome: audit.OK, Bytes: int64(len(content)), DurationMS: r.DurationMS,
		}, r)
	})

	t.Run("a write refused under read-only is denied with the marker", func(t *testing.T) {
		e, sink := auEnv(t, w, wrRO, nil)
		res := auCall(t, e.tools.Write(), sess, map[string]any{"file_path": "ro.txt", "content": auSecret})
		require.True(t, res.IsError)
		assert.NoFileExists(t, filepath.Join(w.ws, "ro.txt"))
		r := sink.last(t)
		assert.Equal(t, audit.Denied, r.Decision)
		assert.Equal(t, "[sandbox: file access denied under read-only mode]", r.Marker)
		assert.Equal(t, sandbox.DenialMarker(sandbox.ReadOnly), r.Marker)
		assert.Equal(t, audit.Error, r.Outcome)
		assert.Equal(t, string(fs.CodeSandboxDenied), r.Code)
		assert.Equal(t, "read-only", r.Mode)
		assert.Equal(t, []string{filepath.Join(w.ws, "ro.txt")}, r.Paths)
		assert.Zero(t, r.Bytes)
	})

	t.Run("refused arguments are invalid and change nothing", func(t *testing.T) {
		e, sink := auEnv(t, w, wrWW, nil)
		for _, args := range []map[string]any{
			{"file_path": "inv.txt", "content": auSecret, "dryRun": true},
			{"file_path": "inv.txt", "content": 42},
			{"file_path": "inv.txt", "content": auSecret, "sandbox_permissions": "danger-full-access"},
		} {
			res := auCall(t, e.tools.Write(), sess, args)
			require.True(t, res.IsError)
			r := sink.last(t)
			assert.Equal(t, audit.Invalid, r.Decision, "%v", args)
			assert.Equal(t, string(errcode.InvalidArgument), r.Code)
			assert.Equal(t, audit.Error, r.Outcome)
			assert.Nil(t, r.Escalation)
		}
		assert.NoFileExists(t, filepath.Join(w.ws, "inv.txt"))
	})

	t.Run("an edit and a read record the bytes written and returned", func(t *testing.T) {
		e, sink := auEnv(t, w, wrWW, nil)
		p := wrPut(t, filepath.Join(w.ws, "e.txt"), "one\ntwo\n")
		res := auCall(t, e.tools.Edit(), sess, map[string]any{"file_path": p, "old_string": "two", "new_string": "three"})
		require.False(t, res.IsError, res.Text)
		r := sink.last(t)
		assert.Equal(t, []string{p}, r.Paths)
		assert.Equal(t, int64(len("one\nthree\n")), r.Bytes)
		res = auCall(t, e.tools.Read(), sess, map[string]any{"file_path": p})
		require.False(t, res.IsError, res.Text)
		r = sink.last(t)
		assert.Equal(t, "read", r.Tool)
		assert.Equal(t, int64(len("one\nthree")), r.Bytes, "the lines returned, joined")
		assert.Equal(t, audit.Allowed, r.Decision)
	})

	t.Run("a move records both canonical paths, a delete its target", func(t *testing.T) {
		e, sink := auEnv(t, w, wrWW, nil)
		from := wrPut(t, filepath.Join(w.ws, "m1.txt"), "x")
		res := auCall(t, e.tools.Move(), sess, map[string]any{"source": "m1.txt", "destination": "sub/../m2.txt"})
		require.False(t, res.IsError, res.Text)
		r := sink.last(t)
		assert.Equal(t, []string{from, filepath.Join(w.ws, "m2.txt")}, r.Paths)
		res = auCall(t, e.tools.Delete(), sess, map[string]any{"path": "m2.txt"})
		require.False(t, res.IsError, res.Text)
		assert.NoFileExists(t, filepath.Join(w.ws, "m2.txt"))
		assert.Equal(t, []string{filepath.Join(w.ws, "m2.txt")}, sink.last(t).Paths)
	})
}

// TestAuditRecordsEscalation: an escalation asked records what was asked,
// the user's answer and its scope, the decision, and the mode the call ran
// under.
func TestAuditRecordsEscalation(t *testing.T) {
	w := wrNewWorld(t)
	const why = "Write the generated file."
	tests := []struct {
		name    string
		outcome sandbox.Outcome
		nobody  bool
		want    audit.Decision
		scope   string
		mode    string
		code    errcode.Code
	}{
		{name: "approved once", outcome: sandbox.AllowedOnce, want: audit.Approved, scope: "once", mode: "workspace-write"},
		{name: "approved for the session", outcome: sandbox.AllowedForSession, want: audit.Approved, scope: "session", mode: "workspace-write"},
		{name: "rejected", outcome: sandbox.Rejected, want: audit.Declined, mode: "read-only", code: sandboxpolicy.CodeEscalationRefused},
		{name: "cancelled", outcome: sandbox.Cancelled, want: audit.Declined, mode: "read-only", code: sandboxpolicy.CodeEscalationRefused},
		{name: "no one to ask", nobody: true, want: audit.Declined, mode: "read-only", code: sandboxpolicy.CodeEscalationRefused},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var approver sandbox.Approver
			answer := tc.outcome
			if tc.nobody {
				answer = sandbox.Unavailable
			} else {
				approver = (&wrApprovals{outcome: tc.outcome}).approver()
			}
			e, sink := auEnv(t, w, wrRO, approver)
			sess := session.New("sess-esc", w.ws)
			name := "esc" + string(rune('a'+i)) + ".txt"
			res := auCall(t, e.tools.Write(), sess, map[string]any{
				"file_path": name, "content": auSecret, "sandbox_permissions": "workspace-write", "justification": why,
			})
			r := sink.last(t)
			assert.Equal(t, tc.want, r.Decision)
			assert.Equal(t, &audit.Escalation{What: "workspace-write", Justification: why, Answer: string(answer), Scope: tc.scope}, r.Escalation)
			assert.Equal(t, tc.mode, r.Mode)
			assert.Equal(t, string(tc.code), r.Code)
			assert.Equal(t, []string{filepath.Join(w.ws, name)}, r.Paths)
			if tc.want == audit.Approved {
				require.False(t, res.IsError, res.Text)
				assert.Equal(t, audit.OK, r.Outcome)
				assert.FileExists(t, filepath.Join(w.ws, name))
				return
			}
			assert.Equal(t, audit.Error, r.Outcome)
			assert.NoFileExists(t, filepath.Join(w.ws, name))
		})
	}
}

// TestAuditRecordsReadDenial: a read the deny-read set refuses is denied
// with the read marker; an approved one records "read <path>" once; no
// secret reaches a record.
func TestAuditRecordsReadDenial(t *testing.T) {
	w := drNewWorld(t)
	approvals := &wrApprovals{outcome: sandbox.AllowedForSession}
	sink := &auSink{}
	cfg := &sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}, Homes: []string{w.home}}
	e := wrNew(t, wrSetup{Cwd: w.ws, Sandbox: cfg, Approver: approvals.approver(), Bare: true, Sink: sink})
	sess := session.New("sess-rd", w.ws)

	res := auCall(t, e.tools.Read(), sess, map[string]any{"file_path": ".env"})
	require.Equal(t, fs.CodeReadDenied, res.Code)
	r := sink.last(t)
	assert.Equal(t, audit.Denied, r.Decision)
	assert.Equal(t, sandbox.ReadDenialMarker(sandbox.WorkspaceWrite), r.Marker)
	assert.Equal(t, string(fs.CodeReadDenied), r.Code)
	assert.Equal(t, []string{w.env}, r.Paths)
	assert.Zero(t, r.Bytes)

	res = auCall(t, e.tools.Read(), sess, map[string]any{"file_path": "link", "sandbox_permissions": "danger-full-access", "justification": "Check the key."})
	require.False(t, res.IsError, res.Text)
	require.Contains(t, res.Text, drKey, "the approved read returns the key")
	r = sink.last(t)
	assert.Equal(t, audit.Approved, r.Decision)
	assert.Equal(t, &audit.Escalation{What: "read " + w.key, Justification: "Check the key.", Answer: string(sandbox.AllowedForSession), Scope: "once"}, r.Escalation,
		"a credential read is allowed once whatever the answer")
	assert.Equal(t, []string{w.key}, r.Paths, "the canonical target of the symlink")
	assert.Equal(t, int64(len(drKey)), r.Bytes)
	assert.Equal(t, "workspace-write", r.Mode)
}

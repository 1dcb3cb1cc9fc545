package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// sink keeps every record it is handed.
type sink struct {
	mu      sync.Mutex
	records []audit.Record
}

func (s *sink) Append(r audit.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
}

// recording returns a confining file-tools guard in read-only mode whose
// records go to a sink and to a log observed at debug.
func recording(t *testing.T, approver sandbox.Approver) (*guard.Guard, *sink, *observer.ObservedLogs) {
	t.Helper()
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	core, logs := observer.New(zapcore.DebugLevel)
	s := &sink{}
	g, err := guard.New(guard.Config{Family: sandbox.FileTools, Policy: pol, Confines: true, Approver: approver, Sink: s, Logger: zap.New(core)})
	require.NoError(t, err)
	return g, s, logs
}

// TestRecordClosesEveryCall: each call, run or refused, hands one record to
// the sink and one line to the log: at debug when allowed or invalid, at
// info when denied or when it asked an escalation; the line's fields are
// the record's.
func TestRecordClosesEveryCall(t *testing.T) {
	failing := sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		return "", errors.New("the client went away")
	})
	g, s, logs := recording(t, failing)
	var seen *audit.Entry
	tl := g.Tool(touch(), true, func(ctx context.Context, c *guard.Call) tool.Result {
		seen = audit.FromContext(ctx)
		standing := c.Standing()
		esc, err := c.Escalation()
		if err != nil {
			return g.Fail(err, nil)
		}
		if esc.Mode != "" {
			if _, err := c.Escalate(ctx, *standing, esc, sandbox.ApprovalRequest{Target: "/srv/ws/f"}); err != nil {
				return g.Fail(err, standing)
			}
		}
		if string(c.Args["path"]) == `"denied"` {
			return g.Fail(&fs.Error{Code: fs.CodeSandboxDenied, Op: "write", Mode: standing.Mode}, standing)
		}
		return tool.Result{Text: "ran"}
	})
	ctx := session.NewContext(context.Background(), session.New("sess-g", "/srv/ws"))
	tests := []struct {
		name     string
		args     string
		decision audit.Decision
		code     string
		marker   string
		answer   *audit.Escalation
		level    zapcore.Level
	}{
		{name: "allowed", args: `{"path":"ok"}`, decision: audit.Allowed, level: zapcore.DebugLevel},
		{name: "an unknown key is invalid", args: `{"pth":"x"}`, decision: audit.Invalid, code: "INVALID_ARGUMENT", level: zapcore.DebugLevel},
		{
			name: "a sandbox denial", args: `{"path":"denied"}`, decision: audit.Denied, code: "FS_SANDBOX_DENIED",
			marker: sandbox.DenialMarker(sandbox.ReadOnly), level: zapcore.InfoLevel,
		},
		{
			name: "an approver that fails gives no answer", args: `{"path":"x","sandbox_permissions":"workspace-write","justification":"why\u0007 not"}`,
			decision: audit.Declined, code: string(sandboxpolicy.CodeApprovalFailed),
			answer: &audit.Escalation{What: "workspace-write", Justification: "why not"}, level: zapcore.InfoLevel,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			res := tl.Handler(ctx, tool.Call{ID: "42", Client: "probe 1", Arguments: json.RawMessage(tc.args)})
			require.Len(t, s.records, 1)
			r := s.records[0]
			s.records = nil
			if tc.decision != audit.Invalid {
				require.NotNil(t, seen, "the body's context carries the call's entry")
				assert.Equal(t, "sess-g", seen.Record().Session)
			}
			assert.Equal(t, tc.decision, r.Decision)
			assert.Equal(t, tc.code, r.Code)
			assert.Equal(t, tc.marker, r.Marker)
			assert.Equal(t, res.Marker, r.Marker)
			assert.Equal(t, tc.answer, r.Escalation)
			assert.Equal(t, res.IsError, r.Outcome == audit.Error)
			assert.Equal(t, "touch", r.Tool)
			assert.Equal(t, "42", r.Call)
			assert.Equal(t, "probe 1", r.Client)

			lines := logs.TakeAll()
			require.Len(t, lines, 1)
			assert.Equal(t, tc.level, lines[0].Level)
			assert.Equal(t, "audit", lines[0].LoggerName)
			fields := lines[0].ContextMap()
			assert.Equal(t, string(tc.decision), fields["decision"])
			assert.Equal(t, "touch", fields["tool"])
			assert.Equal(t, "sess-g", fields["session"])
			assert.Equal(t, "probe 1", fields["client"])
			if tc.marker != "" {
				assert.Equal(t, tc.marker, fields["marker"])
			}
		})
	}
}

// TestRecordWithoutSink: a guard with no sink and no logger still runs
// every call, and its body still finds the call's entry.
func TestRecordWithoutSink(t *testing.T) {
	g := newGuard(t, sandbox.FileTools, true)
	tl := g.Tool(touch(), false, func(ctx context.Context, c *guard.Call) tool.Result {
		audit.FromContext(ctx).AddPaths("/srv/ws/f")
		c.Standing()
		return tool.Result{Text: audit.FromContext(ctx).Record().Mode + " " + audit.FromContext(ctx).Record().Paths[0]}
	})
	res := tl.Handler(context.Background(), tool.Call{Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, "workspace-write /srv/ws/f", res.Text)
}

// TestRecordSessionBudget: once a session has written its share of the
// audit log (audit.Log.Admit), its calls are refused with
// AUDIT_SESSION_BUDGET and their bodies do not run; the log on disk holds
// every call that ran and the first refusal only; another session's calls
// still run.
func TestRecordSessionBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: 4096, Keep: 1})
	require.NoError(t, err)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	g, err := guard.New(guard.Config{Family: sandbox.FileTools, Policy: pol, Confines: true, Sink: l})
	require.NoError(t, err)
	ran := 0
	tl := g.Tool(touch(), false, func(context.Context, *guard.Call) tool.Result { ran++; return tool.Result{Text: "ran"} })
	flood := session.NewContext(context.Background(), session.New("flood", "/srv/ws"))
	var res tool.Result
	calls := 0
	for ; calls < 1000; calls++ {
		res = tl.Handler(flood, tool.Call{ID: strconv.Itoa(calls), Arguments: json.RawMessage(`{"path":"x"}`)})
		if res.IsError {
			break
		}
	}
	require.True(t, res.IsError, "the budget (1024 bytes) ends the session's calls")
	assert.Equal(t, audit.CodeSessionBudget, res.Code)
	assert.Equal(t, calls, ran, "the refused call did not run")
	for i := range 5 {
		res = tl.Handler(flood, tool.Call{ID: "late" + strconv.Itoa(i), Arguments: json.RawMessage(`{"path":"x"}`)})
		assert.Equal(t, audit.CodeSessionBudget, res.Code)
	}
	assert.Equal(t, calls, ran)
	other := session.NewContext(context.Background(), session.New("other", "/srv/ws"))
	res = tl.Handler(other, tool.Call{ID: "other", Arguments: json.RawMessage(`{"path":"x"}`)})
	assert.False(t, res.IsError, res.Text)
	require.NoError(t, l.Close())

	var got []string
	_, err = audit.Read(path, audit.Filter{}, func(r audit.Record, _ []byte) error {
		got = append(got, r.Session+"/"+r.Call+"/"+r.Code)
		return nil
	})
	require.NoError(t, err)
	var want []string
	for i := range calls {
		want = append(want, "flood/"+strconv.Itoa(i)+"/")
	}
	want = append(want, "flood/"+strconv.Itoa(calls)+"/AUDIT_SESSION_BUDGET", "other/other/")
	assert.Equal(t, want, got)
}

package sandboxpolicy_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

func TestResolve(t *testing.T) {
	dir := realTempDir(t)
	fallback := mkdir(t, filepath.Join(dir, "fallback"))
	wsA := mkdir(t, filepath.Join(dir, "a"))
	wsB := mkdir(t, filepath.Join(dir, "b"))
	physical := mkdir(t, filepath.Join(dir, "physical"))
	mkdir(t, filepath.Join(physical, "child"))
	lexical := mkdir(t, filepath.Join(dir, "lexical"))
	symlink(t, filepath.Join(physical, "child"), filepath.Join(lexical, "link"))
	wsLink := symlink(t, wsA, filepath.Join(dir, "a-link"))

	withMode := func(id, cwd string, modes ...sandbox.Mode) *session.Session {
		s := session.New(id, cwd)
		for _, m := range modes {
			require.NoError(t, sandboxpolicy.SetMode(s, m))
		}
		return s
	}

	tests := []struct {
		name     string
		def      sandbox.Mode
		sess     *session.Session
		approved sandbox.Mode
		want     sandbox.ExecutionPolicy
	}{
		{
			name: "P-03 no session gives the default mode and the fallback root, with no session id",
			def:  ro, sess: nil,
			want: sandbox.ExecutionPolicy{Mode: ro, WorkspaceRoot: fallback},
		},
		{
			name: "P-03 no session follows a configured default mode",
			def:  ww, sess: nil,
			want: sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: fallback},
		},
		{
			name: "P-04 a session without an override gets the default mode, its own root and its id",
			def:  ww, sess: session.New("s-a", wsA),
			want: sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: wsA, SessionID: "s-a"},
		},
		{
			name: "P-04 a session override replaces the default mode",
			def:  ro, sess: withMode("s-a", wsA, danger),
			want: sandbox.ExecutionPolicy{Mode: danger, WorkspaceRoot: wsA, SessionID: "s-a"},
		},
		{
			name: "P-04 an override narrower than the default also wins",
			def:  danger, sess: withMode("s-a", wsA, ro),
			want: sandbox.ExecutionPolicy{Mode: ro, WorkspaceRoot: wsA, SessionID: "s-a"},
		},
		{
			name: "P-04 a session cwd reached through a symlink is canonical",
			def:  ww, sess: session.New("s-a", wsLink),
			want: sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: wsA, SessionID: "s-a"},
		},
		{
			name: "P-06 a session cwd <lexical>/link/.. resolves to the physical parent of the link target",
			def:  ww, sess: session.New("s-p", filepath.Join(lexical, "link")+"/.."),
			want: sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: physical, SessionID: "s-p"},
		},
		{
			name: "P-07 an approved mode outranks the session override; the root stays the session cwd",
			def:  ro, sess: withMode("s-a", wsA, ww),
			approved: danger,
			want:     sandbox.ExecutionPolicy{Mode: danger, WorkspaceRoot: wsA, SessionID: "s-a"},
		},
		{
			name: "P-07 an approved mode outranks the default when there is no override",
			def:  ro, sess: session.New("s-a", wsA),
			approved: ww,
			want:     sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: wsA, SessionID: "s-a"},
		},
		{
			name: "P-07 an approved mode applies to a call with no session",
			def:  ro, sess: nil,
			approved: danger,
			want:     sandbox.ExecutionPolicy{Mode: danger, WorkspaceRoot: fallback},
		},
		{
			name: "P-08 a session without a cwd gets the fallback root",
			def:  ww, sess: session.New("s-nocwd", ""),
			want: sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: fallback, SessionID: "s-nocwd"},
		},
		{
			name: "P-08 a session without a cwd keeps its override",
			def:  ro, sess: withMode("s-nocwd", "", ww),
			want: sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: fallback, SessionID: "s-nocwd"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := mustNew(t, sandboxpolicy.Config{Mode: tc.def, WorkspaceRoot: fallback})
			assert.Equal(t, stamped(tc.want, svc), svc.Resolve(tc.sess, sandbox.FileTools, tc.approved))
		})
	}

	t.Run("P-03 Default equals the policy of a call with no session", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{Mode: ww, WorkspaceRoot: fallback})
		assert.Equal(t, svc.Default(), svc.Resolve(nil, sandbox.FileTools, ""))
		assert.Empty(t, svc.Default().SessionID)
	})

	t.Run("P-04 two sessions resolve independently and leave the fallback unchanged", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{Mode: ro, WorkspaceRoot: fallback})
		a := withMode("s-a", wsA, ww)
		b := withMode("s-b", wsB, danger)
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: wsA, SessionID: "s-a"}, svc), svc.Resolve(a, sandbox.FileTools, ""))
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: danger, WorkspaceRoot: wsB, SessionID: "s-b"}, svc), svc.Resolve(b, sandbox.FileTools, ""))
		require.NoError(t, sandboxpolicy.SetMode(a, ro))
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: ro, WorkspaceRoot: wsA, SessionID: "s-a"}, svc), svc.Resolve(a, sandbox.FileTools, ""))
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: danger, WorkspaceRoot: wsB, SessionID: "s-b"}, svc), svc.Resolve(b, sandbox.FileTools, ""))
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: ro, WorkspaceRoot: fallback}, svc), svc.Default())
	})

	t.Run("P-15 after each mode switch the next resolution reflects the latest switch", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{Mode: ro, WorkspaceRoot: fallback})
		s := session.New("s-switch", wsA)
		for _, m := range []sandbox.Mode{ww, danger, ro, ww, ww, ro} {
			require.NoError(t, sandboxpolicy.SetMode(s, m))
			assert.Equal(t, m, svc.Resolve(s, sandbox.FileTools, "").Mode)
			assert.Equal(t, svc.Resolve(s, sandbox.FileTools, ""), svc.Resolve(s, sandbox.FileTools, ""), "repeated resolution without a switch is stable")
		}
	})

	t.Run("P-16 a session recreated from another session's events reproduces the override", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{Mode: ro, WorkspaceRoot: fallback})
		orig := session.New("s-resume", wsA)
		require.NoError(t, orig.Append(session.Event{Type: "chat/message", Data: "hello"}))
		require.NoError(t, sandboxpolicy.SetMode(orig, danger))
		require.NoError(t, sandboxpolicy.SetMode(orig, ww))
		require.NoError(t, orig.Append(session.Event{Type: "chat/message", Data: "bye"}))

		resumed := session.New(orig.ID(), orig.Cwd(), orig.Events()...)
		m, ok := sandboxpolicy.OverrideOf(resumed)
		require.True(t, ok)
		assert.Equal(t, ww, m)
		assert.Equal(t, svc.Resolve(orig, sandbox.FileTools, ""), svc.Resolve(resumed, sandbox.FileTools, ""))
	})
}

func TestOverrideOf(t *testing.T) {
	other := session.Event{Type: "chat/message", Data: "hi"}
	modeEvt := func(m sandbox.Mode) session.Event {
		return session.Event{Type: sandboxpolicy.EventMode, Data: sandboxpolicy.ModeEvent{Mode: m}}
	}
	tests := []struct {
		name   string
		events []session.Event
		want   sandbox.Mode
		ok     bool
	}{
		{name: "P-18 no switches is undefined"},
		{name: "P-18 only unrelated events is undefined", events: []session.Event{other, other}},
		{name: "P-05 one switch is its mode", events: []session.Event{modeEvt(ww)}, want: ww, ok: true},
		{name: "P-18 workspace-write then read-only folds to read-only", events: []session.Event{modeEvt(ww), modeEvt(ro)}, want: ro, ok: true},
		{name: "P-05 the last switch wins over unrelated events after it", events: []session.Event{modeEvt(danger), other, modeEvt(ww), other}, want: ww, ok: true},
		{name: "P-05 an event of another type carrying a ModeEvent is ignored", events: []session.Event{modeEvt(ro), {Type: "sandbox/other", Data: sandboxpolicy.ModeEvent{Mode: danger}}}, want: ro, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := sandboxpolicy.OverrideOf(session.New("s", "/w", tc.events...))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("P-05 no agent (a nil session) is undefined", func(t *testing.T) {
		got, ok := sandboxpolicy.OverrideOf(nil)
		assert.False(t, ok)
		assert.Empty(t, got)
	})
}

func TestSetMode(t *testing.T) {
	t.Run("P-19 the event type is sandbox/mode", func(t *testing.T) {
		assert.Equal(t, "sandbox/mode", sandboxpolicy.EventMode)
	})

	for _, m := range sandbox.Modes() {
		t.Run("P-19 SetMode "+string(m)+" appends exactly one sandbox/mode event with data {mode}", func(t *testing.T) {
			s := session.New("s", "/w", session.Event{Type: "chat/message", Data: "x"})
			require.NoError(t, sandboxpolicy.SetMode(s, m))
			events := s.Events()
			require.Len(t, events, 2)
			assert.Equal(t, session.Event{Type: "chat/message", Data: "x"}, events[0])
			assert.Equal(t, session.Event{Type: "sandbox/mode", Data: sandboxpolicy.ModeEvent{Mode: m}}, events[1])
			data, err := json.Marshal(events[1].Data)
			require.NoError(t, err)
			assert.JSONEq(t, `{"mode":"`+string(m)+`"}`, string(data))
		})
	}

	t.Run("P-19 SetMode tells the session's observers once", func(t *testing.T) {
		s := session.New("s", "/w")
		var seen []session.Event
		cancel := s.Observe(func(_ *session.Session, e session.Event) error { seen = append(seen, e); return nil })
		defer cancel()
		require.NoError(t, sandboxpolicy.SetMode(s, danger))
		assert.Equal(t, []session.Event{{Type: "sandbox/mode", Data: sandboxpolicy.ModeEvent{Mode: danger}}}, seen)
	})
}

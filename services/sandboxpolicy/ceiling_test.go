package sandboxpolicy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// neverAsked is an approver that fails the test when it is asked.
func neverAsked(t *testing.T) sandbox.Approver {
	t.Helper()
	return sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		t.Errorf("the approver was asked (%s for %q) beyond the session's ceiling", req.Mode, req.Hosts)
		return sandbox.AllowedForSession, nil
	})
}

// ceiled is a new session whose ceilings were set in order.
func ceiled(t *testing.T, cwd string, ceilings ...sandbox.Mode) *session.Session {
	t.Helper()
	s := session.New("s", cwd)
	for _, c := range ceilings {
		require.NoError(t, sandboxpolicy.SetCeiling(s, c))
	}
	return s
}

func TestCeiling(t *testing.T) {
	cases := []struct {
		name     string
		ceilings []sandbox.Mode
		want     sandbox.Mode
		set      bool
	}{
		{name: "none set: no ceiling"},
		{name: "one", ceilings: []sandbox.Mode{ww}, want: ww, set: true},
		{name: "a later wider one does not raise it", ceilings: []sandbox.Mode{ww, danger}, want: ww, set: true},
		{name: "a later narrower one lowers it", ceilings: []sandbox.Mode{danger, ww, ro}, want: ro, set: true},
		{name: "the narrowest wins whatever the order", ceilings: []sandbox.Mode{ro, danger, ww}, want: ro, set: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ceiled(t, "/ws", tc.ceilings...)
			got, ok := sandboxpolicy.Ceiling(s)
			assert.Equal(t, tc.set, ok)
			assert.Equal(t, tc.want, got)
			var n int
			for _, e := range s.Events() {
				if e.Type == sandboxpolicy.EventCeiling {
					assert.Equal(t, sandboxpolicy.CeilingEvent{Mode: tc.ceilings[n]}, e.Data)
					n++
				}
			}
			assert.Len(t, tc.ceilings, n, "one event per SetCeiling")
		})
	}

	t.Run("a nil session has no ceiling and cannot get one", func(t *testing.T) {
		_, ok := sandboxpolicy.Ceiling(nil)
		assert.False(t, ok)
		require.Error(t, sandboxpolicy.SetCeiling(nil, ww))
	})
	t.Run("fail closed: an unknown mode is an error, recorded, and holds the session to read-only", func(t *testing.T) {
		s := ceiled(t, "/ws", danger)
		err := sandboxpolicy.SetCeiling(s, "root")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unknown ceiling mode "root": allowed values are read-only, workspace-write, danger-full-access`)
		got, ok := sandboxpolicy.Ceiling(s)
		assert.True(t, ok)
		assert.Equal(t, ro, got)
	})
	t.Run("fail closed: a ceiling event of another shape counts as read-only", func(t *testing.T) {
		s := ceiled(t, "/ws", ww)
		require.NoError(t, s.Append(session.Event{Type: sandboxpolicy.EventCeiling, Data: "danger-full-access"}))
		got, _ := sandboxpolicy.Ceiling(s)
		assert.Equal(t, ro, got)
	})
}

// TestResolve_ClampsToCeiling: whichever mode wins (the deployment's, the
// session's standing mode, its grant, an approved one), a session's
// ceiling caps it, and a clamped grant is no grant.
func TestResolve_ClampsToCeiling(t *testing.T) {
	ws := realTempDir(t)
	grant := func(m sandbox.Mode) session.Event {
		return session.Event{Type: sandboxpolicy.EventMode, Data: sandboxpolicy.ModeEvent{Mode: m, Granted: true, Family: sandbox.FileTools}}
	}
	cases := []struct {
		name      string
		server    sandbox.Mode
		events    []session.Event // before the ceiling
		setMode   sandbox.Mode    // after the ceiling
		ceiling   sandbox.Mode    // "" for none
		approved  sandbox.Mode
		want      sandbox.Mode
		wantGrant bool
	}{
		{name: "the deployment's mode, wider: clamped", server: danger, ceiling: ww, want: ww},
		{name: "the deployment's mode, within: kept", server: ro, ceiling: ww, want: ro},
		{name: "no ceiling: the deployment's mode", server: danger, want: danger},
		{name: "a standing mode set before the ceiling: clamped", server: ro, events: []session.Event{{Type: sandboxpolicy.EventMode, Data: sandboxpolicy.ModeEvent{Mode: danger}}}, ceiling: ww, want: ww},
		{name: "SetMode wider than the ceiling: clamped", server: ro, ceiling: ww, setMode: danger, want: ww},
		{name: "SetMode within the ceiling: kept", server: ro, ceiling: ww, setMode: ww, want: ww},
		{name: "a session grant wider than a later ceiling: clamped, no longer a grant", server: ro, events: []session.Event{grant(danger)}, ceiling: ww, want: ww},
		{name: "a session grant within the ceiling: kept, still a grant", server: ro, events: []session.Event{grant(ww)}, ceiling: danger, want: ww, wantGrant: true},
		{name: "an approved mode wider than the ceiling: clamped", server: ro, ceiling: ww, approved: danger, want: ww},
		{name: "an approved mode within the ceiling: kept", server: ro, ceiling: ww, approved: ww, want: ww},
		{name: "a read-only ceiling holds an approval of danger-full-access", server: ww, ceiling: ro, approved: danger, want: ro},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := mustNew(t, sandboxpolicy.Config{Mode: tc.server, WorkspaceRoot: ws})
			s := session.New("s", ws, tc.events...)
			if tc.ceiling != "" {
				require.NoError(t, sandboxpolicy.SetCeiling(s, tc.ceiling))
			}
			if tc.setMode != "" {
				require.NoError(t, sandboxpolicy.SetMode(s, tc.setMode))
			}
			p := svc.Resolve(s, sandbox.FileTools, tc.approved)
			assert.Equal(t, tc.want, p.Mode)
			assert.Equal(t, tc.ceiling, p.Ceiling, "the policy carries the ceiling")
			assert.Equal(t, tc.wantGrant, p.SessionGrant)
			g, ok := sandboxpolicy.SessionGrant(s, sandbox.FileTools)
			assert.Equal(t, tc.wantGrant, ok)
			if tc.wantGrant {
				assert.Equal(t, tc.want, g)
			}
			if tc.want != ro {
				assert.Equal(t, ws, p.WorkspaceRoot, "the roots are the session's, clamped or not")
			}
			// The other family is clamped the same way.
			assert.False(t, sandboxpolicy.IsWider(svc.Resolve(s, sandbox.Commands, tc.approved).Mode, tc.want))
		})
	}
}

func TestEscalate_Ceiling(t *testing.T) {
	refusedBeyond := []struct {
		name               string
		ceiling            sandbox.Mode
		requested, current sandbox.Mode
	}{
		{name: "danger-full-access beyond a workspace-write ceiling", ceiling: ww, requested: danger, current: ww},
		{name: "danger-full-access from read-only beyond a workspace-write ceiling", ceiling: ww, requested: danger, current: ro},
		{name: "workspace-write beyond a read-only ceiling", ceiling: ro, requested: ww, current: ro},
		{name: "beyond a ceiling lowered after a wider one", ceiling: ro, requested: ww, current: ro},
	}
	for _, tc := range refusedBeyond {
		t.Run("refused without asking: "+tc.name, func(t *testing.T) {
			s := ceiled(t, "/ws", danger, tc.ceiling)
			got, err := approveEscalation(t.Context(), neverAsked(t), s, "write_file", sandbox.SubjectOperation, tc.requested, tc.current, "needed")
			require.Error(t, err)
			assert.Empty(t, got)
			var ee *sandboxpolicy.EscalationError
			require.True(t, errors.As(err, &ee))
			assert.Equal(t, sandboxpolicy.CodeEscalationRefused, ee.Code)
			assert.Equal(t, tc.requested, ee.Mode)
			assert.Equal(t, `sandbox escalation to "`+string(tc.requested)+`" is refused without asking: the principal's widest mode is "`+string(tc.ceiling)+`"`, err.Error())
			_, granted := sandboxpolicy.SessionGrant(s, sandbox.FileTools)
			assert.False(t, granted, "nothing recorded")
		})
	}

	within := []struct {
		name               string
		ceiling            sandbox.Mode
		requested, current sandbox.Mode
		outcome            sandbox.Outcome
	}{
		{name: "workspace-write within a workspace-write ceiling, once", ceiling: ww, requested: ww, current: ro, outcome: sandbox.AllowedOnce},
		{name: "danger-full-access within a danger-full-access ceiling, for the session", ceiling: danger, requested: danger, current: ww, outcome: sandbox.AllowedForSession},
	}
	for _, tc := range within {
		t.Run("asked within the ceiling: "+tc.name, func(t *testing.T) {
			s := ceiled(t, "/ws", tc.ceiling)
			rec := &recorder{outcome: tc.outcome}
			got, err := approveEscalation(t.Context(), rec.approver(), s, "write_file", sandbox.SubjectOperation, tc.requested, tc.current, "needed")
			require.NoError(t, err)
			assert.Equal(t, tc.requested, got)
			assert.Equal(t, 1, rec.calls())
			g, ok := sandboxpolicy.SessionGrant(s, sandbox.FileTools)
			assert.Equal(t, tc.outcome == sandbox.AllowedForSession, ok)
			if ok {
				assert.Equal(t, tc.requested, g)
			}
		})
	}

	t.Run("a rejection within the ceiling is the approver's refusal, not the ceiling's", func(t *testing.T) {
		s := ceiled(t, "/ws", ww)
		rec := &recorder{outcome: sandbox.Rejected}
		_, err := approveEscalation(t.Context(), rec.approver(), s, "write_file", sandbox.SubjectOperation, ww, ro, "needed")
		require.Error(t, err)
		assert.Equal(t, 1, rec.calls())
		assert.NotContains(t, err.Error(), "widest mode")
	})
}

func TestEscalateRead_Ceiling(t *testing.T) {
	req := sandbox.ApprovalRequest{Tool: "read_file", Family: sandbox.FileTools, Mode: danger, Target: "/home/u/.ssh/id_ed25519", ReadRule: "~/.ssh", Justification: "deploy key"}
	for _, c := range []sandbox.Mode{ro, ww} {
		t.Run("refused without asking under a "+string(c)+" ceiling", func(t *testing.T) {
			err := sandboxpolicy.EscalateRead(t.Context(), neverAsked(t), ceiled(t, "/ws", c), req, c)
			var ee *sandboxpolicy.EscalationError
			require.True(t, errors.As(err, &ee), "%v", err)
			assert.Equal(t, sandboxpolicy.CodeEscalationRefused, ee.Code)
			assert.Equal(t, `reading a path in the deny-read set (it needs "danger-full-access") is refused without asking: the principal's widest mode is "`+string(c)+`"`, err.Error())
		})
	}
	t.Run("asked under a danger-full-access ceiling", func(t *testing.T) {
		rec := &recorder{outcome: sandbox.AllowedOnce}
		require.NoError(t, sandboxpolicy.EscalateRead(t.Context(), rec.approver(), ceiled(t, "/ws", danger), req, ww))
		assert.Equal(t, 1, rec.calls())
	})
}

func TestEscalateHosts_Ceiling(t *testing.T) {
	req := sandbox.ApprovalRequest{Tool: "exec", Family: sandbox.Commands, Hosts: []string{"proxy.golang.org"}, Command: "go mod download", Workdir: "/ws", Justification: "fetch modules"}
	t.Run("refused without asking under a read-only ceiling", func(t *testing.T) {
		s := ceiled(t, "/ws", ro)
		forSession, err := sandboxpolicy.EscalateHosts(t.Context(), neverAsked(t), s, req)
		assert.False(t, forSession)
		var ee *sandboxpolicy.EscalationError
		require.True(t, errors.As(err, &ee), "%v", err)
		assert.Equal(t, sandboxpolicy.CodeEscalationRefused, ee.Code)
		assert.Contains(t, err.Error(), `allowing the network hosts "proxy.golang.org" is refused without asking: the principal's widest mode is "read-only"`)
		assert.Empty(t, sandboxpolicy.GrantedHosts(s))
	})
	for _, c := range []sandbox.Mode{ww, danger} {
		t.Run("asked under a "+string(c)+" ceiling", func(t *testing.T) {
			s := ceiled(t, "/ws", c)
			rec := &recorder{outcome: sandbox.AllowedForSession}
			forSession, err := sandboxpolicy.EscalateHosts(t.Context(), rec.approver(), s, req)
			require.NoError(t, err)
			assert.True(t, forSession)
			assert.Equal(t, 1, rec.calls())
			assert.Equal(t, []string{"proxy.golang.org"}, sandboxpolicy.GrantedHosts(s))
		})
	}
	t.Run("a ceiling lowered to read-only drops the hosts granted before", func(t *testing.T) {
		s := ceiled(t, "/ws", ww)
		rec := &recorder{outcome: sandbox.AllowedForSession}
		_, err := sandboxpolicy.EscalateHosts(t.Context(), rec.approver(), s, req)
		require.NoError(t, err)
		require.Equal(t, []string{"proxy.golang.org"}, sandboxpolicy.GrantedHosts(s))
		require.NoError(t, sandboxpolicy.SetCeiling(s, ro))
		assert.Empty(t, sandboxpolicy.GrantedHosts(s))
	})
}

func TestInvariants_CeilingEvent(t *testing.T) {
	tracker := startedTracker(t)
	s := tracker.Start("s", "/ws")
	for _, m := range sandbox.Modes() {
		require.NoError(t, sandboxpolicy.SetCeiling(s, m), "a known mode passes")
	}
	cases := []struct {
		name string
		data any
		want string
	}{
		{name: "an unknown mode", data: sandboxpolicy.CeilingEvent{Mode: hostRoot}, want: `sandbox/ceiling carries unknown mode "host-root"`},
		{name: "the empty mode", data: sandboxpolicy.CeilingEvent{}, want: `sandbox/ceiling carries unknown mode ""`},
		{name: "a nil pointer payload", data: (*sandboxpolicy.CeilingEvent)(nil), want: `sandbox/ceiling carries unknown mode ""`},
		{name: "a mode event's payload", data: sandboxpolicy.ModeEvent{Mode: ww}, want: "sandbox/ceiling carries no mode (data sandboxpolicy.modeEvent)"},
		{name: "a string", data: "read-only", want: "sandbox/ceiling carries no mode (data string)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireModeViolation(t, s.Append(session.Event{Type: sandboxpolicy.EventCeiling, Data: tc.data}), tc.want)
		})
	}
	t.Run("SetCeiling of an unknown mode returns the violation", func(t *testing.T) {
		requireModeViolation(t, sandboxpolicy.SetCeiling(s, hostRoot), `sandbox/ceiling carries unknown mode "host-root"`)
	})
}

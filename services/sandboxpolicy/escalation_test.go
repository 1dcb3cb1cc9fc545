package sandboxpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

const (
	ro     = sandbox.ReadOnly
	ww     = sandbox.WorkspaceWrite
	danger = sandbox.DangerFullAccess
)

func TestWider(t *testing.T) {
	tests := []struct {
		name    string
		current sandbox.Mode
		want    []sandbox.Mode
	}{
		{name: "X-05 read-only widens to workspace-write and danger-full-access", current: ro, want: []sandbox.Mode{ww, danger}},
		{name: "X-05 workspace-write widens to danger-full-access", current: ww, want: []sandbox.Mode{danger}},
		{name: "X-05 danger-full-access widens to nothing", current: danger},
		{name: "fail closed: an unknown mode widens to nothing", current: "host-root"},
		{name: "fail closed: the empty mode widens to nothing", current: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, sandboxpolicy.Wider(tc.current))
		})
	}
}

func TestIsWider(t *testing.T) {
	wider := map[[2]sandbox.Mode]bool{
		{ww, ro}:     true,
		{danger, ro}: true,
		{danger, ww}: true,
	}
	all := []sandbox.Mode{ro, ww, danger, "host-root", ""}
	for _, requested := range all {
		for _, current := range all {
			want := wider[[2]sandbox.Mode{requested, current}]
			name := fmt.Sprintf("X-05 %q is strictly wider than %q: %v", requested, current, want)
			t.Run(name, func(t *testing.T) {
				assert.Equal(t, want, sandboxpolicy.IsWider(requested, current))
			})
		}
	}
}

func TestEscalationTargets(t *testing.T) {
	t.Run("X-06 the escalation targets are workspace-write and danger-full-access, never read-only", func(t *testing.T) {
		assert.Equal(t, []sandbox.Mode{"workspace-write", "danger-full-access"}, sandboxpolicy.EscalationTargets())
	})
}

func TestCheckEscalationArgs(t *testing.T) {
	tests := []struct {
		name          string
		permissions   string
		justification string
		wantErr       string // exact text; "" = no error
		wantIn        []string
	}{
		{name: "X-07 neither field is valid"},
		{name: "X-07 workspace-write with a justification is valid", permissions: "workspace-write", justification: "write the build output"},
		{name: "X-07 danger-full-access with a justification is valid", permissions: "danger-full-access", justification: "edit /etc/hosts as asked"},
		{name: "X-07 a justification with surrounding whitespace is valid", permissions: "workspace-write", justification: "  needed  "},
		{
			name:        "X-08 sandbox_permissions without justification is refused",
			permissions: "workspace-write",
			wantErr:     "invalid escalation: sandbox_permissions requires a justification",
		},
		{
			name:        "X-08 danger-full-access without justification is refused",
			permissions: "danger-full-access",
			wantErr:     "invalid escalation: sandbox_permissions requires a justification",
		},
		{
			name:          "X-09 justification without sandbox_permissions is refused",
			justification: "because",
			wantErr:       "invalid escalation: justification is only valid together with sandbox_permissions",
		},
		{
			name:          "X-09 a whitespace-only justification without sandbox_permissions is refused as unpaired",
			justification: "   ",
			wantErr:       "invalid escalation: justification is only valid together with sandbox_permissions",
		},
		{
			name:          "X-10 a whitespace-only justification is refused",
			permissions:   "workspace-write",
			justification: " \t\n ",
			wantErr:       "invalid justification: expected a non-empty sentence",
		},
		{
			name:          "X-06 read-only is not an escalation target",
			permissions:   "read-only",
			justification: "narrow it",
			wantIn:        []string{`"read-only"`, "workspace-write", "danger-full-access"},
		},
		{
			name:          "X-06 an unknown permission value is refused",
			permissions:   "root",
			justification: "need root",
			wantIn:        []string{`"root"`, "workspace-write", "danger-full-access"},
		},
		{
			name:          "X-06 a padded permission value is refused",
			permissions:   " workspace-write",
			justification: "because",
			wantIn:        []string{`" workspace-write"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sandboxpolicy.CheckEscalationArgs(tc.permissions, tc.justification)
			if tc.wantErr == "" && tc.wantIn == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
			}
			for _, s := range tc.wantIn {
				assert.Contains(t, err.Error(), s)
			}
			assert.ErrorIs(t, err, sandboxpolicy.ErrInvalidEscalation)
			assert.NotEqual(t, sandboxpolicy.CodeEscalationRefused, escalationCode(err))
		})
	}
}

func TestMarkers(t *testing.T) {
	t.Run("X-11 the denial marker names the mode", func(t *testing.T) {
		assert.Equal(t, "[sandbox: file access denied under read-only mode]", sandbox.DenialMarker(ro))
		assert.Equal(t, "[sandbox: file access denied under workspace-write mode]", sandbox.DenialMarker(ww))
		assert.Equal(t, "[sandbox: file access denied under danger-full-access mode]", sandbox.DenialMarker(danger))
	})

	t.Run("X-12 the subjects are operation and command", func(t *testing.T) {
		assert.Equal(t, "operation", sandbox.SubjectOperation)
		assert.Equal(t, "command", sandbox.SubjectCommand)
	})

	t.Run("X-12 the hint for fs operations is exact", func(t *testing.T) {
		assert.Equal(t,
			"[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]",
			sandbox.EscalationHint(sandbox.SubjectOperation))
	})

	t.Run("X-12 the hint for shell commands is exact", func(t *testing.T) {
		assert.Equal(t,
			"[sandbox: escalation available — retry this exact command once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]",
			sandbox.EscalationHint(sandbox.SubjectCommand))
	})
}

type ctxKey struct{}

func TestApproveEscalationGrants(t *testing.T) {
	tests := []struct {
		name      string
		requested sandbox.Mode
		effective sandbox.Mode
	}{
		{name: "X-13 allowed-once grants workspace-write from read-only", requested: ww, effective: ro},
		{name: "X-13 allowed-once grants danger-full-access from read-only", requested: danger, effective: ro},
		{name: "X-13 allowed-once grants danger-full-access from workspace-write", requested: danger, effective: ww},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{outcome: sandbox.AllowedOnce}
			sess := session.New("sess-1", "/work")
			ctx := context.WithValue(context.Background(), ctxKey{}, "call-ctx")

			got, err := approveEscalation(ctx, rec.approver(), sess, "write", sandbox.SubjectOperation, tc.requested, tc.effective, "write the report")
			require.NoError(t, err)
			assert.Equal(t, tc.requested, got)

			require.Equal(t, 1, rec.calls(), "the approver is asked exactly once")
			req := rec.requests[0]
			assert.Equal(t, "write", req.Tool)
			assert.Equal(t, tc.requested, req.Mode)
			assert.Equal(t, "write the report", req.Justification)
			assert.Equal(t, "escalate sandbox to "+string(tc.requested)+": write the report", req.Reason)
			assert.Equal(t, "call-ctx", rec.contexts[0].Value(ctxKey{}), "the call's context reaches the approver")
		})
	}

	t.Run("X-13 the reason carries the justification verbatim", func(t *testing.T) {
		rec := &recorder{outcome: sandbox.AllowedOnce}
		_, err := approveEscalation(context.Background(), rec.approver(), session.New("s", ""), "edit", sandbox.SubjectOperation, danger, ro, `fix "/etc/hosts": it's broken`)
		require.NoError(t, err)
		require.Equal(t, 1, rec.calls())
		assert.Equal(t, `escalate sandbox to danger-full-access: fix "/etc/hosts": it's broken`, rec.requests[0].Reason)
		assert.Equal(t, "edit", rec.requests[0].Tool)
	})
}

func TestApproveEscalationNotWider(t *testing.T) {
	tests := []struct {
		name      string
		requested sandbox.Mode
		effective sandbox.Mode
	}{
		{name: "X-14 read-only from read-only is not wider", requested: ro, effective: ro},
		{name: "X-14 workspace-write from workspace-write is not wider", requested: ww, effective: ww},
		{name: "X-14 read-only from workspace-write is narrower", requested: ro, effective: ww},
		{name: "X-14 read-only from danger-full-access is narrower", requested: ro, effective: danger},
		{name: "X-14 workspace-write from danger-full-access is narrower", requested: ww, effective: danger},
		{name: "X-14 danger-full-access from danger-full-access is not wider", requested: danger, effective: danger},
		{name: "X-14 an unknown requested mode is never wider", requested: "root", effective: ro},
		{name: "X-14 nothing is wider than an unknown effective mode", requested: danger, effective: "host-root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{outcome: sandbox.AllowedOnce}
			got, err := approveEscalation(context.Background(), rec.approver(), session.New("s", "/w"), "write", sandbox.SubjectOperation, tc.requested, tc.effective, "why")
			require.Error(t, err)
			assert.Empty(t, got)
			assert.EqualError(t, err, fmt.Sprintf(`sandbox escalation to %q is not strictly wider than this call's current %q mode`, tc.requested, tc.effective))
			assert.EqualValues(t, sandboxpolicy.CodeEscalationRefused, escalationCode(err))
			assert.Equal(t, 0, rec.calls(), "the approver is never asked for a non-widening request")
		})
	}
}

func TestApproveEscalationOutcomes(t *testing.T) {
	approverErr := errors.New("elicitation transport closed")
	tests := []struct {
		name      string
		outcome   sandbox.Outcome
		err       error
		subject   string
		requested sandbox.Mode
		wantErr   string // exact, for refusals
		refusal   bool
		wantIs    error
	}{
		{
			name: "X-17 rejected names the operation and the mode", outcome: sandbox.Rejected,
			subject: sandbox.SubjectOperation, requested: danger, refusal: true,
			wantErr: `the user rejected escalating this operation to "danger-full-access"`,
		},
		{
			name: "X-17 rejected names the command subject", outcome: sandbox.Rejected,
			subject: sandbox.SubjectCommand, requested: ww, refusal: true,
			wantErr: `the user rejected escalating this command to "workspace-write"`,
		},
		{
			name: "X-17 cancelled", outcome: sandbox.Cancelled,
			subject: sandbox.SubjectOperation, requested: danger, refusal: true,
			wantErr: `approval for escalating to "danger-full-access" was cancelled`,
		},
		{
			name: "X-17 unavailable says no approval channel is available", outcome: sandbox.Unavailable,
			subject: sandbox.SubjectOperation, requested: ww, refusal: true,
			wantErr: `sandbox escalation to "workspace-write" requires approval, but no approval channel is available`,
		},
		{
			name: "X-17 an unknown outcome is an error, not a refusal and never a grant", outcome: "allowed-always",
			subject: sandbox.SubjectOperation, requested: danger,
		},
		{
			name: "X-17 an empty outcome is an error, never a grant", outcome: "",
			subject: sandbox.SubjectOperation, requested: danger,
		},
		{
			name: "X-17 an approver error is an error wrapping it, never a grant", err: approverErr,
			subject: sandbox.SubjectOperation, requested: danger, wantIs: approverErr,
		},
		{
			name: "X-17 an approver error beside allowed-once is still never a grant", outcome: sandbox.AllowedOnce, err: approverErr,
			subject: sandbox.SubjectOperation, requested: danger, wantIs: approverErr,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{outcome: tc.outcome, err: tc.err}
			got, err := approveEscalation(context.Background(), rec.approver(), session.New("s", "/w"), "write", tc.subject, tc.requested, ro, "why")
			require.Error(t, err)
			assert.Empty(t, got)
			assert.Equal(t, 1, rec.calls())
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
			}
			if tc.refusal {
				assert.EqualValues(t, sandboxpolicy.CodeEscalationRefused, escalationCode(err))
			} else {
				assert.NotEqual(t, sandboxpolicy.CodeEscalationRefused, escalationCode(err))
			}
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			}
		})
	}
}

func TestApproveEscalationOrder(t *testing.T) {
	sess := session.New("s", "/w")
	tests := []struct {
		name      string
		approver  bool
		sess      *session.Session
		requested sandbox.Mode
		effective sandbox.Mode
		wantErr   string
	}{
		{
			name: "X-18 widening is checked first: non-widening, no approver, no agent gives not strictly wider",
			sess: nil, requested: ro, effective: ro,
			wantErr: `sandbox escalation to "read-only" is not strictly wider than this call's current "read-only" mode`,
		},
		{
			name: "X-15 X-18 the approver is checked second: widening, no approver, no agent gives no approval service",
			sess: nil, requested: danger, effective: ro,
			wantErr: `sandbox escalation to "danger-full-access" requires approval, but no approval service is composed`,
		},
		{
			name: "X-15 widening with an agent but no approver gives no approval service",
			sess: sess, requested: ww, effective: ro,
			wantErr: `sandbox escalation to "workspace-write" requires approval, but no approval service is composed`,
		},
		{
			name:     "X-16 X-18 the agent is checked third: widening, approver, no agent gives no agent to route it through",
			approver: true, sess: nil, requested: danger, effective: ww,
			wantErr: `sandbox escalation to "danger-full-access" requires approval, but the call has no agent to route it through`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{outcome: sandbox.AllowedOnce}
			var approver sandbox.Approver
			if tc.approver {
				approver = rec.approver()
			}
			got, err := approveEscalation(context.Background(), approver, tc.sess, "write", sandbox.SubjectOperation, tc.requested, tc.effective, "why")
			require.Error(t, err)
			assert.Empty(t, got)
			assert.EqualError(t, err, tc.wantErr)
			assert.EqualValues(t, sandboxpolicy.CodeEscalationRefused, escalationCode(err))
			assert.Equal(t, 0, rec.calls(), "the approver is not asked before every check passes")
		})
	}
}

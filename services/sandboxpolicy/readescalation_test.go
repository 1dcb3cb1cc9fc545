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

// TestEscalateRead: a credential read is asked in every standing mode
// (danger-full-access included), only for danger-full-access; both allow
// answers allow this one read and record no session grant; the refusals
// and failures carry their codes and never ask twice.
func TestEscalateRead(t *testing.T) {
	req := func(mode sandbox.Mode) sandbox.ApprovalRequest {
		return sandbox.ApprovalRequest{
			Family: sandbox.FileTools, Tool: "read", Mode: mode, Justification: "check the key",
			Target: "/home/u/.ssh/id_ed25519", Given: "/ws/link", ReadRule: "~/.ssh (default)",
		}
	}
	cases := []struct {
		name     string
		mode     sandbox.Mode
		standing sandbox.Mode
		outcome  sandbox.Outcome
		err      error
		noRule   bool
		code     string // "" allowed
		asked    int
	}{
		{name: "allowed once under read-only", mode: danger, standing: ro, outcome: sandbox.AllowedOnce, asked: 1},
		{name: "asked under danger-full-access too", mode: danger, standing: danger, outcome: sandbox.AllowedOnce, asked: 1},
		{name: "allow for the session counts as once", mode: danger, standing: ww, outcome: sandbox.AllowedForSession, asked: 1},
		{name: "workspace-write cannot lift deny-read", mode: ww, standing: ro, outcome: sandbox.AllowedOnce, code: string(sandboxpolicy.CodeEscalationRefused)},
		{name: "a request without its rule fails", mode: danger, standing: ro, noRule: true, code: string(sandboxpolicy.CodeApprovalFailed)},
		{name: "rejected", mode: danger, standing: ro, outcome: sandbox.Rejected, code: string(sandboxpolicy.CodeEscalationRefused), asked: 1},
		{name: "cancelled", mode: danger, standing: ro, outcome: sandbox.Cancelled, code: string(sandboxpolicy.CodeEscalationRefused), asked: 1},
		{name: "unavailable", mode: danger, standing: ro, outcome: sandbox.Unavailable, code: string(sandboxpolicy.CodeEscalationRefused), asked: 1},
		{name: "an approver error", mode: danger, standing: ro, err: errors.New("closed"), code: string(sandboxpolicy.CodeApprovalFailed), asked: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{outcome: c.outcome, err: c.err}
			sess := session.New("s", "/ws")
			r := req(c.mode)
			if c.noRule {
				r.ReadRule = ""
			}
			err := sandboxpolicy.EscalateRead(context.Background(), rec.approver(), sess, r, c.standing)
			assert.Equal(t, c.code, escalationCode(err), "%v", err)
			assert.Equal(t, c.asked, rec.calls())
			_, granted := sandboxpolicy.SessionGrant(sess, sandbox.FileTools)
			assert.False(t, granted, "a credential read records no session grant")
			if c.asked > 0 {
				assert.Equal(t, c.standing, rec.requests[0].Standing)
			}
		})
	}
	t.Run("no approver and no session are refusals", func(t *testing.T) {
		assert.Equal(t, string(sandboxpolicy.CodeEscalationRefused), escalationCode(sandboxpolicy.EscalateRead(context.Background(), nil, session.New("s", "/ws"), req(danger), ro)))
		rec := &recorder{outcome: sandbox.AllowedOnce}
		assert.Equal(t, string(sandboxpolicy.CodeEscalationRefused), escalationCode(sandboxpolicy.EscalateRead(context.Background(), rec.approver(), nil, req(danger), ro)))
		assert.Zero(t, rec.calls())
	})
	t.Run("the prompt says it is a credential read, names the file and the rule, and that the session answer counts once", func(t *testing.T) {
		p := sandboxpolicy.Prompt(req(danger))
		require.NotEmpty(t, p)
		assert.Equal(t, `The agent asks to run the "read" tool to read "/home/u/.ssh/id_ed25519" (given as "/ws/link"). `+
			`This is a credential read: the path is in the deny-read set (~/.ssh (default)), which no sandbox mode lifts. `+
			`Allowing it lets exactly this one read of this one file through; allowing it for the session counts as once, for this read only, and later reads are asked again. `+
			`Its justification: check the key`, p)
	})
	t.Run("a changed target names both paths and says nothing was read", func(t *testing.T) {
		err := sandboxpolicy.ReadTargetChanged("/a", "/b")
		assert.Equal(t, string(sandboxpolicy.CodeTargetChanged), escalationCode(err))
		assert.EqualError(t, err, `the approved read was refused: its file changed after the approval (shown "/a", now "/b"); nothing was read`)
	})
}

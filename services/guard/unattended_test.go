package guard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// TestUnattendedDenials: composed with a sandbox.Unattended approver (a
// one-shot harness call without a terminal), every denial the guard
// renders says what to do instead of offering an escalation (a write's,
// a command's, a refused host's, a deny-read path's), and an escalation
// is asked of no one, not even an approver the call carries (issue 37: the
// hints rendered by the guard alone, where harness call used to edit them
// with strings.Replace).
func TestUnattendedDenials(t *testing.T) {
	u := sandbox.Unattended{Why: "nobody is at the terminal", Remedy: "widen --mode", HostsRemedy: "add --allow-domain", ReadRemedy: "add --allow-read"}
	pl, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	files, err := guard.New(guard.Config{Family: sandbox.FileTools, Policy: pl, Confines: true, Approver: u})
	require.NoError(t, err)
	cmds, err := guard.New(guard.Config{Family: sandbox.Commands, Policy: pl, Confines: true, Hosts: true, Approver: u})
	require.NoError(t, err)
	policy := sandbox.ExecutionPolicy{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/ws"}

	res := files.Fail(&fs.Error{Code: fs.CodeSandboxDenied, Op: "write", Path: "/x", Message: "denied"}, &policy)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.ReadOnly)+"\n[sandbox: no escalation here: nobody is at the terminal; widen --mode]", res.Text)
	res = cmds.Denied(policy, "(inferred: ...)", "exit code 1")
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.ReadOnly)+"\n(inferred: ...)\n[sandbox: no escalation here: nobody is at the terminal; widen --mode]\nexit code 1", res.Text)
	res = cmds.DeniedHosts(policy, []exec.RefusedHost{{Host: "example.com", Port: 443, Reason: "not allowed"}}, 0, "")
	assert.Contains(t, res.Text, "\n[sandbox: no escalation here: nobody is at the terminal; add --allow-domain]")
	assert.NotContains(t, res.Text, "allow_hosts")
	res = files.DeniedRead(policy, "(refused)", "", true)
	assert.Equal(t, "Error: "+sandbox.ReadDenialMarker(sandbox.ReadOnly)+"\n(refused)\n[sandbox: no escalation here: nobody is at the terminal; add --allow-read]", res.Text)

	asked := false
	own := sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		asked = true
		return sandbox.AllowedOnce, nil
	})
	tl := files.Tool(touch(), true, func(ctx context.Context, c *guard.Call) tool.Result {
		standing := c.Standing()
		esc, err := c.Escalation()
		if err != nil {
			return files.Fail(err, nil)
		}
		if _, err := c.Escalate(ctx, *standing, esc, sandbox.ApprovalRequest{Target: "/srv/ws/f"}); err != nil {
			return files.Fail(err, standing)
		}
		return tool.Result{Text: "ran"}
	})
	ctx := session.NewContext(context.Background(), session.New("sess-u", "/srv/ws"))
	res = tl.Handler(ctx, tool.Call{Approver: own, Arguments: json.RawMessage(`{"path":"x","sandbox_permissions":"workspace-write","justification":"needed"}`)})
	assert.True(t, res.IsError, res.Text)
	assert.False(t, asked, "the call's own approver is not asked under an unattended one")
	assert.Contains(t, res.Text, "no approval channel is available")
}

// unaskedApprover is a call's own approver that can ask no one (an MCP
// client that declared no elicitation).
type unaskedApprover struct{ u sandbox.Unattended }

func (unaskedApprover) Approve(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
	return sandbox.Unavailable, nil
}

func (a unaskedApprover) Unasked() (sandbox.Unattended, bool) { return a.u, true }

// TestUnaskedCallDenials: a call whose own approver can ask no one
// (sandbox.Unasked) has it in its standing policy (ExecutionPolicy.Unasked),
// and its denials give that approver's remedies instead of the escalation
// hints (a write, a command, a refused host, a read); a call whose
// approver can ask keeps the hints; at the session's ceiling the ceiling's
// line wins for a write.
func TestUnaskedCallDenials(t *testing.T) {
	u := sandbox.Unattended{Why: "this client cannot ask", Remedy: "widen the mode", HostsRemedy: "add the domain", ReadRemedy: "drop the pattern"}
	pl, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	files, err := guard.New(guard.Config{Family: sandbox.FileTools, Policy: pl, Confines: true})
	require.NoError(t, err)
	cmds, err := guard.New(guard.Config{Family: sandbox.Commands, Policy: pl, Confines: true, Hosts: true})
	require.NoError(t, err)
	standing := func(g *guard.Guard, approver sandbox.Approver) *sandbox.ExecutionPolicy {
		var p *sandbox.ExecutionPolicy
		tl := g.Tool(touch(), true, func(_ context.Context, c *guard.Call) tool.Result {
			p = c.Standing()
			return tool.Result{Text: "ran"}
		})
		ctx := session.NewContext(context.Background(), session.New("sess-unasked", "/srv/ws"))
		tl.Handler(ctx, tool.Call{Approver: approver, Arguments: json.RawMessage(`{"path":"x"}`)})
		require.NotNil(t, p)
		return p
	}
	p := standing(files, unaskedApprover{u})
	require.NotNil(t, p.Unasked, "the call's own approver can ask no one")
	res := files.Fail(&fs.Error{Code: fs.CodeSandboxDenied, Op: "write", Path: "/x", Message: "denied"}, p)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.ReadOnly)+"\n[sandbox: no escalation here: this client cannot ask; widen the mode]", res.Text)
	res = files.DeniedRead(*p, "(refused)", "", true)
	assert.Equal(t, "Error: "+sandbox.ReadDenialMarker(sandbox.ReadOnly)+"\n(refused)\n[sandbox: no escalation here: this client cannot ask; drop the pattern]", res.Text)
	pc := standing(cmds, unaskedApprover{u})
	res = cmds.Denied(*pc, "(inferred: ...)", "exit code 1")
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.ReadOnly)+"\n(inferred: ...)\n[sandbox: no escalation here: this client cannot ask; widen the mode]\nexit code 1", res.Text)
	res = cmds.DeniedHosts(*pc, []exec.RefusedHost{{Host: "example.com", Port: 443, Reason: "not allowed"}}, 0, "")
	assert.Contains(t, res.Text, "\n[sandbox: no escalation here: this client cannot ask; add the domain]")
	assert.NotContains(t, res.Text, "allow_hosts")

	asks := sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		return sandbox.AllowedOnce, nil
	})
	p = standing(files, asks)
	assert.Nil(t, p.Unasked, "an approver that can ask")
	res = files.Fail(&fs.Error{Code: fs.CodeSandboxDenied, Op: "write", Path: "/x", Message: "denied"}, p)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.ReadOnly)+"\n"+sandbox.EscalationHint(sandbox.SubjectOperation), res.Text)

	atCeiling := sandbox.ExecutionPolicy{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/ws", Ceiling: sandbox.ReadOnly, Unasked: &u}
	res = files.Fail(&fs.Error{Code: fs.CodeSandboxDenied, Op: "write", Path: "/x", Message: "denied"}, &atCeiling)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.ReadOnly)+"\n"+sandbox.CeilingHint(sandbox.ReadOnly), res.Text)
}

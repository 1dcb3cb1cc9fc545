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

package sandboxpolicy_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// SetMode switches a session's standing mode for the rest of the session,
// for every tool family: every later call of that session resolves to it,
// while other sessions keep the deployment default. (An "allow for the
// session" answer records a grant for one family only.)
func ExampleSetMode() {
	svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/fallback", TempRoots: []string{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := session.New("s1", "/srv/project")
	fmt.Println(svc.Resolve(s, sandbox.FileTools, "").Mode)

	if err := sandboxpolicy.SetMode(s, sandbox.WorkspaceWrite); err != nil {
		fmt.Println(err)
		return
	}
	p := svc.Resolve(s, sandbox.FileTools, "")
	fmt.Println(p.Mode, p.WritableRoots())
	fmt.Println(svc.Resolve(session.New("s2", "/srv/other"), sandbox.FileTools, "").Mode)
	// Output:
	// read-only
	// workspace-write [/srv/project]
	// read-only
}

// Escalate asks the approver only for a mode strictly wider than the call's;
// a refusal is an *EscalationError whose Code says what happened.
func ExampleEscalate() {
	approver := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		fmt.Println("asked:", req.Reason)
		return sandbox.Rejected, nil
	})
	req := sandbox.ApprovalRequest{
		Family: sandbox.FileTools, Tool: "write",
		Mode: sandbox.DangerFullAccess, Justification: "update /etc/hosts", Target: "/etc/hosts",
	}
	_, err := sandboxpolicy.Escalate(context.Background(), approver, session.New("s1", "/srv/project"), req, sandbox.WorkspaceWrite)
	var ee *sandboxpolicy.EscalationError
	if errors.As(err, &ee) {
		fmt.Println(ee.Code)
		fmt.Println(ee.Message)
	}
	// Output:
	// asked: escalate sandbox to danger-full-access: update /etc/hosts
	// SANDBOX_ESCALATION_REFUSED
	// the user rejected escalating this operation to "danger-full-access"
}

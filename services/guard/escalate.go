package guard

import (
	"context"
	"encoding/json"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Escalation is what a call asks for with its escalation arguments: the
// requested mode and the model's justification; the zero value asks for
// nothing.
type Escalation struct {
	Mode          sandbox.Mode
	Justification string
}

// Escalation reads and checks the call's escalation arguments (X-07..X-10):
// each a string, paired, the mode one of the escalation targets. Errors:
// *ArgError with the model-facing text.
func (c *Call) Escalation() (Escalation, error) {
	perm, err := c.optString(argPermissions)
	if err != nil {
		return Escalation{}, err
	}
	just, err := c.optString(argJustification)
	if err != nil {
		return Escalation{}, err
	}
	if err := sandboxpolicy.CheckEscalationArgs(perm, just); err != nil {
		return Escalation{}, BadArg(err.Error())
	}
	return Escalation{Mode: sandbox.Mode(perm), Justification: just}, nil
}

// optString returns the string argument name, "" when absent or null.
func (c *Call) optString(name string) (string, error) {
	v, ok := c.Args[name]
	if !ok || string(v) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", BadArg(name + " must be a string")
	}
	return s, nil
}

// Escalate asks for esc on behalf of the call and returns the policy the
// call then runs under (X-13..X-18, issue 21). req says what the call would
// do (Target, Given, Operation, Boundary; Command and Workdir for a
// command); the guard fills in the session, family, tool, mode and
// justification. The approver asked is the call's own (the MCP elicitation
// of this very call), else the composed one; an "allow for the session"
// answer is recorded for the guard's family only, so it never changes how
// the other family's calls run. Errors: *sandboxpolicy.EscalationError.
func (c *Call) Escalate(ctx context.Context, standing sandbox.ExecutionPolicy, esc Escalation, req sandbox.ApprovalRequest) (sandbox.ExecutionPolicy, error) {
	approver := c.Approver
	if approver == nil {
		approver = c.g.approver
	}
	req.Family, req.Tool = c.g.family, c.tool
	req.Mode, req.Justification = esc.Mode, esc.Justification
	granted, err := sandboxpolicy.Escalate(ctx, approver, c.Session, req, standing.Mode)
	if err != nil {
		return sandbox.ExecutionPolicy{}, err
	}
	return c.g.policy.Resolve(c.Session, c.g.family, granted), nil
}

// EscalateRead asks for one read the deny-read set refused, on behalf of
// the call (issue 24): req names the canonical file (Target), the path as
// given (Given) and the rule (ReadRule); the guard fills in the family,
// tool, mode and justification. It asks the call's own approver, else the
// composed one, whatever standing's mode, and records no session grant
// (sandboxpolicy.EscalateRead). nil means the user allowed exactly this
// read. Errors: *sandboxpolicy.EscalationError.
func (c *Call) EscalateRead(ctx context.Context, standing sandbox.ExecutionPolicy, esc Escalation, req sandbox.ApprovalRequest) error {
	approver := c.Approver
	if approver == nil {
		approver = c.g.approver
	}
	req.Family, req.Tool = c.g.family, c.tool
	req.Mode, req.Justification = esc.Mode, esc.Justification
	return sandboxpolicy.EscalateRead(ctx, approver, c.Session, req, standing.Mode)
}

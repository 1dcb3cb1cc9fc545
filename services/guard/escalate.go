package guard

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Escalation is what a call asks for with its escalation arguments: the
// requested mode, or the network hosts (allow_hosts, CleanHosts' form), and
// the model's justification; the zero value asks for nothing.
type Escalation struct {
	Mode          sandbox.Mode
	Hosts         []string
	Justification string
}

// Escalation reads and checks the call's escalation arguments (X-07..X-10):
// each a string, paired, the mode one of the escalation targets; or
// allow_hosts (where the guard declares it) with a justification and
// without sandbox_permissions, each host a name or address
// (sandboxpolicy.CleanHosts). Errors: *ArgError with the model-facing text.
func (c *Call) Escalation() (Escalation, error) {
	perm, err := c.optString(argPermissions)
	if err != nil {
		return Escalation{}, err
	}
	just, err := c.optString(argJustification)
	if err != nil {
		return Escalation{}, err
	}
	if raw, ok := c.Args[argHosts]; ok && c.g.hosts && string(raw) != "null" {
		var hosts []string
		if json.Unmarshal(raw, &hosts) != nil {
			return Escalation{}, BadArg(argHosts + " must be an array of host names")
		}
		switch {
		case perm != "":
			return Escalation{}, BadArg("invalid escalation: ask for sandbox_permissions or allow_hosts, not both in one call")
		case strings.TrimSpace(just) == "":
			return Escalation{}, BadArg("invalid escalation: allow_hosts requires a justification")
		}
		if hosts, err = sandboxpolicy.CleanHosts(hosts); err != nil {
			return Escalation{}, BadArg("invalid allow_hosts: " + err.Error())
		}
		return Escalation{Hosts: hosts, Justification: just}, nil
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
// the other family's calls run. The call's audit record keeps the request,
// the answer and its scope, and the mode the call then runs under.
// A request for the mode the call already runs under (standing.Mode: the
// deployment's, or the session's grant the user gave for the guard's
// family) is simply allowed: standing is returned, nobody is asked and no
// escalation is recorded (issue 36: the retry a denial hint asks for after
// an "allow for the session" answer). Errors:
// *sandboxpolicy.EscalationError.
func (c *Call) Escalate(ctx context.Context, standing sandbox.ExecutionPolicy, esc Escalation, req sandbox.ApprovalRequest) (sandbox.ExecutionPolicy, error) {
	if esc.Mode == standing.Mode {
		return standing, nil
	}
	approver, ans := c.asker()
	req.Family, req.Tool = c.g.family, c.tool
	req.Mode, req.Justification = esc.Mode, esc.Justification
	granted, err := sandboxpolicy.Escalate(ctx, approver, c.Session, req, standing.Mode)
	c.recordEscalation(string(esc.Mode), esc.Justification, ans, err, ans != nil && ans.outcome == sandbox.AllowedForSession)
	if err != nil {
		return sandbox.ExecutionPolicy{}, err
	}
	p := c.g.policy.Resolve(c.Session, c.g.family, granted)
	c.rec.Update(func(r *audit.Record) { r.Mode = string(p.Mode) })
	return p, nil
}

// EscalateRead asks for one read the deny-read set refused, on behalf of
// the call (issue 24): req names the canonical file (Target), the path as
// given (Given) and the rule (ReadRule); the guard fills in the family,
// tool, mode and justification. It asks the call's own approver, else the
// composed one, whatever standing's mode, and records no session grant
// (sandboxpolicy.EscalateRead). nil means the user allowed exactly this
// read; the call's audit record keeps the request ("read <path>") and the
// answer. Errors: *sandboxpolicy.EscalationError.
func (c *Call) EscalateRead(ctx context.Context, standing sandbox.ExecutionPolicy, esc Escalation, req sandbox.ApprovalRequest) error {
	approver, ans := c.asker()
	req.Family, req.Tool = c.g.family, c.tool
	req.Mode, req.Justification = esc.Mode, esc.Justification
	err := sandboxpolicy.EscalateRead(ctx, approver, c.Session, req, standing.Mode)
	// A credential read is allowed once whatever the answer.
	c.recordEscalation("read "+req.Target, esc.Justification, ans, err, false)
	return err
}

// EscalateHosts asks the user to let the call's command reach esc.Hosts
// through the domain proxy (sandboxpolicy.EscalateHosts) and reports
// whether the answer covers the rest of the session (the hosts are then
// the session's grant); false with no error allows this command only. req
// says what the command is (Command, Workdir); the guard fills in the
// family, tool, hosts and justification, and asks the call's own approver,
// else the composed one; the call's audit record keeps the request
// ("hosts <a>, <b>"), the answer and its scope. Errors:
// *sandboxpolicy.EscalationError.
func (c *Call) EscalateHosts(ctx context.Context, esc Escalation, req sandbox.ApprovalRequest) (bool, error) {
	approver, ans := c.asker()
	req.Family, req.Tool = c.g.family, c.tool
	req.Hosts, req.Justification = esc.Hosts, esc.Justification
	forSession, err := sandboxpolicy.EscalateHosts(ctx, approver, c.Session, req)
	c.recordEscalation("hosts "+strings.Join(esc.Hosts, ", "), esc.Justification, ans, err, forSession)
	return forSession, err
}

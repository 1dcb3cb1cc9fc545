package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// approver is the sandbox.Approver of one MCP call: it asks the user
// of the connection that made the call, through elicitation. A client that
// declared no elicitation answers Unavailable. On a 2025-11-25 (or earlier)
// connection it sends an elicitation request and waits for the answer; on a
// 2026-07-28 connection the answer arrives with the retried call, so without
// one it returns an *inputRequired error that stops the call before any
// mutation.
type approver struct {
	s        *Server
	c        *conn
	req      *mcp.CallToolRequest
	tool     string
	newProto bool
	slot     *slot // the call's slot, released while waiting for the user
}

var (
	_ sandbox.Approver = approver{}
	_ sandbox.Unasked  = approver{}
)

// Unasked reports a call whose client cannot be asked (it declared no
// elicitation): its denials then say how the user can allow what was
// refused, rather than offer an escalation whose retry would be refused
// for want of an approval channel.
func (a approver) Unasked() (sandbox.Unattended, bool) {
	if canElicit(a.req, a.newProto) {
		return sandbox.Unattended{}, false
	}
	return clientUnasked, true
}

// clientUnasked is what a denial says to a client that cannot be asked.
var clientUnasked = sandbox.Unattended{
	Why:         "this MCP client cannot ask the user (it declared no elicitation)",
	Remedy:      "to allow this, the user gives this session a wider mode (harness serve's --mode; over HTTP, the principal's mode), or uses a client that supports elicitation",
	HostsRemedy: "to allow a host, the user restarts harness serve with --allow-domain HOST",
	ReadRemedy:  "to read it, the user restarts harness serve without the deny-read pattern that covers it (--allow-read drops a default one)",
}

// Approve asks the calling connection's user about ar.
func (a approver) Approve(ctx context.Context, ar sandbox.ApprovalRequest) (sandbox.Outcome, error) {
	if !canElicit(a.req, a.newProto) {
		return sandbox.Unavailable, nil
	}
	if !a.newProto {
		// Waiting for the user holds no call slot.
		a.slot.release()
		res, err := a.req.Session.Elicit(ctx, elicitation(ar))
		if rerr := a.slot.resume(ctx); rerr != nil {
			return "", rerr
		}
		if inputClosed(err) {
			// The client can no longer answer (its stream ended).
			return sandbox.Unavailable, nil
		}
		if err != nil {
			return "", err
		}
		return outcome(res)
	}
	binding := approvalBinding(a.tool, a.req.Params.Arguments, ar)
	if res, ok := a.req.Params.InputResponses[approvalKey].(*mcp.ElicitResult); ok &&
		a.c.issued.redeem(a.s.key, a.req.Params.RequestState, binding) {
		return outcome(res)
	}
	// No answer, or one not issued for exactly this call (forged, replayed,
	// or for other arguments): ask.
	return "", &inputRequired{params: elicitation(ar), state: a.c.issued.issue(a.s.key, binding)}
}

// inputClosed reports whether err is the made-up answer of a request the
// client can no longer answer (errInputClosed). errors.Is would not do: the
// SDK's wire errors compare by code alone, and a client whose elicitation
// handler fails answers with the same internal-error code; that is the
// client's error, reported as such.
func inputClosed(err error) bool {
	we, ok := errors.AsType[*jsonrpc.Error](err)
	return ok && we.Code == errInputClosed.Code && we.Message == errInputClosed.Message
}

// inputRequired says a 2026-07-28 call stopped at its approval, before any
// mutation: the server answers with an input-required result carrying
// params and state, and runs the call again when the client retries with
// the user's answer.
type inputRequired struct {
	params *mcp.ElicitParams
	state  string
}

func (e *inputRequired) Error() string { return "the approval is asked with an input-required result" }

// approvalKey is the input request id of an approval elicitation.
const approvalKey = "sandbox_approval"

// The choices of the approval form's "decision" field.
const (
	decisionOnce    = "allow-once"
	decisionSession = "allow-session"
	decisionDeny    = "deny"
)

// elicitation returns the elicitation that asks for req: the prompt
// (sandboxpolicy.Prompt: the canonical target, the path as given, the
// operation and its size, the boundary crossed, the cleaned justification)
// and a "decision" field whose enum offers allowing this one call, allowing
// the mode for the rest of the session, or denying (for a credential read,
// req.ReadRule set, both allow answers allow that one read, and the field
// says so; for a command's credential read, req.Reads set, it says only
// allow-once lifts what the question lists).
func elicitation(req sandbox.ApprovalRequest) *mcp.ElicitParams {
	choices := fmt.Sprintf("%s: exactly this one call under %s; %s: this call and the rest of the session under %s, until the connection ends; %s: refuse.", decisionOnce, req.Mode, decisionSession, req.Mode, decisionDeny)
	switch {
	case req.ReadRule != "":
		// A credential read is allowed once whatever the answer
		// (sandboxpolicy.EscalateRead).
		choices = fmt.Sprintf("%s or %s: exactly this one read of this one file (nothing is allowed for the session); %s: refuse.", decisionOnce, decisionSession, decisionDeny)
	case len(req.Reads) > 0:
		// A command's credential read: only the once answer lifts
		// what the prompt lists (sandboxpolicy.NamedReads).
		choices = fmt.Sprintf("%s: exactly this one call under %s, with exactly what the question lists as readable (a directory's entries' names only); %s: this call and the rest of the session under %s, until the connection ends, and the deny-read paths stay hidden from every one of them; %s: refuse.",
			decisionOnce, req.Mode, decisionSession, req.Mode, decisionDeny)
	case len(req.Hosts) > 0:
		choices = fmt.Sprintf("%s: this one command may reach the hosts named; %s: this command and the rest of the session's commands may, until the connection ends; %s: refuse.", decisionOnce, decisionSession, decisionDeny)
	}
	return &mcp.ElicitParams{
		Message: sandboxpolicy.Prompt(req),
		RequestedSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"decision": {
					Type:        "string",
					Title:       "Decision",
					Description: choices,
					Enum:        []any{decisionOnce, decisionSession, decisionDeny},
					Default:     json.RawMessage(strconv.Quote(decisionDeny)),
				},
			},
			Required: []string{"decision"},
		},
	}
}

// errBadAnswer is an accepted elicitation whose content does not fit the
// approval form.
var errBadAnswer = errors.New(`the approval answer does not match its form: "decision" must be one of ` +
	decisionOnce + ", " + decisionSession + ", " + decisionDeny)

// outcome maps the user's answer: accept with decision allow-once ->
// allowed-once, allow-session -> allowed-for-session, deny -> rejected;
// decline -> rejected; cancel -> cancelled. An accepted answer without a
// valid decision is errBadAnswer (the call fails with a code, never runs).
func outcome(res *mcp.ElicitResult) (sandbox.Outcome, error) {
	if res == nil {
		return sandbox.Cancelled, nil
	}
	switch res.Action {
	case "accept":
		switch res.Content["decision"] {
		case decisionOnce:
			return sandbox.AllowedOnce, nil
		case decisionSession:
			return sandbox.AllowedForSession, nil
		case decisionDeny:
			return sandbox.Rejected, nil
		}
		return "", errBadAnswer
	case "decline":
		return sandbox.Rejected, nil
	default:
		return sandbox.Cancelled, nil
	}
}

package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// approver is the sandboxpolicy.Approver of one MCP call: it asks the user
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

// Approve asks the calling connection's user about ar.
func (a approver) Approve(ctx context.Context, ar sandboxpolicy.ApprovalRequest) (sandboxpolicy.Outcome, error) {
	if !canElicit(a.req, a.newProto) {
		return sandboxpolicy.Unavailable, nil
	}
	if !a.newProto {
		// Waiting for the user holds no call slot.
		a.slot.release()
		res, err := a.req.Session.Elicit(ctx, elicitation(ar))
		if rerr := a.slot.resume(ctx); rerr != nil {
			return "", rerr
		}
		if errors.Is(err, errInputClosed) {
			// The client can no longer answer (its stream ended).
			return sandboxpolicy.Unavailable, nil
		}
		if err != nil {
			return "", err
		}
		return outcome(res), nil
	}
	binding := approvalBinding(a.tool, a.req.Params.Arguments, ar)
	if res, ok := a.req.Params.InputResponses[approvalKey].(*mcp.ElicitResult); ok &&
		a.c.issued.redeem(a.s.key, a.req.Params.RequestState, binding) {
		return outcome(res), nil
	}
	// No answer, or one not issued for exactly this call (forged, replayed,
	// or for other arguments): ask.
	return "", &inputRequired{params: elicitation(ar), state: a.c.issued.issue(a.s.key, binding)}
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

// elicitation returns the elicitation that asks for req: a message naming
// the tool, the requested mode and the justification, and a boolean
// "approve" field.
func elicitation(req sandboxpolicy.ApprovalRequest) *mcp.ElicitParams {
	target := ""
	if req.Target != "" {
		target = " on " + strconv.Quote(req.Target)
	}
	if req.Command != "" {
		target = " with the command " + strconv.Quote(req.Command) + " in " + strconv.Quote(req.Workdir)
	}
	return &mcp.ElicitParams{
		Message: fmt.Sprintf("The agent asks to run the %q tool%s once under the %q sandbox mode. Its justification: %s",
			req.Tool, target, req.Mode, sandboxpolicy.Printable(req.Justification)),
		RequestedSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"approve": {Type: "boolean", Title: "Approve", Description: "Allow exactly this one call under the wider mode."},
			},
			Required: []string{"approve"},
		},
	}
}

// outcome maps the user's answer: accept with approve -> allowed-once;
// accept without it, or decline -> rejected; cancel (or anything else) ->
// cancelled.
func outcome(res *mcp.ElicitResult) sandboxpolicy.Outcome {
	if res == nil {
		return sandboxpolicy.Cancelled
	}
	switch res.Action {
	case "accept":
		if approve, ok := res.Content["approve"].(bool); ok && approve {
			return sandboxpolicy.AllowedOnce
		}
		return sandboxpolicy.Rejected
	case "decline":
		return sandboxpolicy.Rejected
	default:
		return sandboxpolicy.Cancelled
	}
}

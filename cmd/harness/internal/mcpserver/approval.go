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

// Approver is the sandboxpolicy.Approver of an MCP composition: it routes an
// escalation to the elicitation of the connection serving the call, found in
// the call's context. Outside a call it answers Unavailable.
type Approver struct{}

type approverKey struct{}

// approveFunc answers one approval request for the current call.
type approveFunc func(ctx context.Context, req sandboxpolicy.ApprovalRequest) (sandboxpolicy.Outcome, error)

func withApprover(ctx context.Context, f approveFunc) context.Context {
	return context.WithValue(ctx, approverKey{}, f)
}

// Approve asks the calling connection's user.
func (Approver) Approve(ctx context.Context, req sandboxpolicy.ApprovalRequest) (sandboxpolicy.Outcome, error) {
	f, ok := ctx.Value(approverKey{}).(approveFunc)
	if !ok {
		return sandboxpolicy.Unavailable, nil
	}
	return f(ctx, req)
}

var _ sandboxpolicy.Approver = Approver{}

// errNeedsInput stops a tool run whose approval must be asked with an
// input-required result; the run is discarded and repeated on the retry.
var errNeedsInput = errors.New("approval requires an input round trip")

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

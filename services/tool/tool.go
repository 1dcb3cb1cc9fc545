// Package tool is the small public vocabulary of model-facing tools: what a
// tool declares (name, description, input and output JSON Schemas,
// annotations, exclusivity), what a call carries (session, call id,
// arguments, the front end's approver) and what a result carries
// (model-facing text, structured value, error flag, code and the error it
// was rendered from, and images). Packages contribute tools to the fx value group
// "tools" through an fx.Out result (`group:"tools"`); any server collects them with
// Group, without knowing them.
package tool

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/fx"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/sandbox"
)

// Annotations are hints about a tool's behavior for clients (they map to
// MCP's readOnlyHint, destructiveHint and idempotentHint).
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
}

// Call is one invocation of a tool. The session it runs in travels in the
// handler's context (session.NewContext; none: a call with no session);
// ID is the front end's id of the call; Arguments is the raw JSON object
// of the arguments. Client names the program that made the call as the
// front end knows it (MCP: the name and version of the client's
// implementation, "claude-code 2.1.0"), "" when unknown; it is recorded,
// never trusted. Principal is who the front end authenticated the caller
// as (the bearer token's subject over HTTP), "" when it authenticated no
// one; it is recorded. Approver, when
// set, is the approver of this call's escalations (a front end whose
// approval channel depends on the call, such as the MCP connection that made
// it); nil means the composition's approver. Progress, when set, reports
// how far a long call has got (see Progress). Idle, when set, runs a wait
// of the call without the front end's slot (see Idle).
type Call struct {
	ID        string
	Client    string
	Principal string
	Arguments json.RawMessage
	Approver  sandbox.Approver
	Progress  Progress
	Idle      Idle
}

// Progress reports that a call has done done units of work out of total
// (total 0: unknown), done increasing from one report to the next, with an
// optional human-readable message ("" for none; e.g. the last lines of a
// running command's output). A front end sets it when its client asked to be
// told (MCP's progressToken) and may drop reports to pace them; a tool calls
// it as often as it likes, from any one goroutine at a time, and never when
// it is nil.
type Progress func(done, total float64, message string)

// Idle runs wait, a part of a call that only waits for something bounded by
// its own limit (a command slot, then the command), with the call's front-end
// slot given back (the MCP server's cap on calls running at once), so other
// calls are not held up behind it; it takes a slot back before it returns,
// waiting outside the front end's queue bound, and returns without one when
// ctx ends first. A tool calls it from the call's goroutine; nil means the
// front end holds no slot, and the tool runs wait itself.
type Idle func(ctx context.Context, wait func())

// Result is the outcome of a call. Text is what the model reads; Value is the
// structured result (nil for errors); IsError marks a tool error, whose Code
// is the machine-readable code (an FS_* code, or a tool-specific code such as
// toolfs's INVALID_ARGUMENT; "" when there is none). Err is the error a
// failed result was rendered from, so a front end can act on what only it
// understands (errors.As); nil for a success. Marker is the sandbox's
// denial marker line ("[sandbox: file access denied under read-only
// mode]") of a call the sandbox refused, "" otherwise: what the call's
// audit record says it was refused with.
type Result struct {
	Text    string
	Value   any
	IsError bool
	Code    errcode.Code
	Err     error
	Marker  string
	// Images are shown to the model after Text (MCP image content), in
	// order; nil for most tools.
	Images []Image
}

// Image is one image of a result: its MIME type ("image/png", "image/jpeg",
// "image/gif", "image/webp") and its raw bytes (a front end encodes them,
// MCP as base64).
type Image struct {
	MIMEType string
	Data     []byte
}

// Handler runs a call. A tool's failure is a Result with IsError, never a Go
// error: Handler has no error return.
type Handler func(ctx context.Context, call Call) Result

// Tool is one model-facing tool.
type Tool struct {
	Name         string
	Description  string
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema
	Annotations  Annotations
	Handler      Handler
}

// ErrorResult returns the error result of message with code, its text
// rendered as `Error: <message>` (spec section 1).
func ErrorResult(message string, code errcode.Code) Result {
	return Result{Text: "Error: " + message, IsError: true, Code: code}
}

// Group is the fx parameter object a server takes to collect every tool.
type Group struct {
	fx.In

	Tools []*Tool `group:"tools"`
}

// Sorted returns the tools ordered by name: consumers never rely on group
// order.
func Sorted(tools []*Tool) []*Tool {
	out := slices.Clone(tools)
	slices.SortFunc(out, func(a, b *Tool) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

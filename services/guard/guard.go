// Package guard runs every guarded call of every tool family the same way
// (issue 21): it decodes the arguments strictly against the tool's own
// schema, reads and pairs the escalation arguments, resolves the call's
// standing policy for the tool's family, asks the call's own approver (the
// MCP elicitation of this call; the composed approver only as a fallback)
// and records a session grant for that family alone, and renders every
// failure (the sandbox denial marker, the escalation hint, remedies, the
// result code). A tool family keeps only its schemas and the bodies of its
// calls; a new family gets all of this by building its tools with
// Guard.Tool.
package guard

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// Guard guards the calls of one tool family. It is safe for concurrent use.
type Guard struct {
	family sandbox.Family
	// policy resolves each call's policy; nil when none is composed.
	policy *sandboxpolicy.Service
	// confines is set when the family's calls run under the policy (its
	// backend or runner confines); only then may a call escalate.
	confines bool
	// approver is the composed approver, asked only when the call carries
	// none of its own.
	approver sandbox.Approver
	// unattended is the composed approver when it is a
	// sandbox.Unattended: no one is asked, and the denials say what to do
	// instead of offering an escalation.
	unattended *sandbox.Unattended
	// unconfined says why escalation is not available when the family does
	// not confine, e.g. "no sandboxing filesystem to escalate".
	unconfined string
	// hosts is set when the family's commands reach the network through
	// the domain proxy, so a call may ask for hosts (allow_hosts).
	hosts bool
	// sink receives each call's audit record; nil when none is composed.
	sink audit.Sink
	// log hears each call's record (record.go).
	log *zap.Logger
}

// Config is what a family's guard needs: its family, the policy service
// (optional unless Confines), whether the family's calls run confined
// under it (else Unconfined says why escalation is not available, in a few
// words), the composed approver (optional), and whether the family's
// commands reach the network through the domain proxy (Hosts: commands
// only, when confined), so a call may ask for hosts. Sink, when set,
// receives the audit record of every call (record.go); Logger, when set,
// hears each record too (debug; info for a denial or an escalation).
type Config struct {
	Family     sandbox.Family
	Policy     *sandboxpolicy.Service
	Confines   bool
	Approver   sandbox.Approver
	Unconfined string
	Hosts      bool
	Sink       audit.Sink
	Logger     *zap.Logger
}

// New returns the guard of cfg.Family. Errors: a Family that is not one of
// sandbox.FileTools and sandbox.Commands (a grant must say what it covers);
// Confines without a Policy.
func New(cfg Config) (*Guard, error) {
	if !cfg.Family.Valid() {
		return nil, errors.New("guard: unknown tool family " + strconv.Quote(string(cfg.Family)) + " (a session grant must say what it covers)")
	}
	if cfg.Confines && cfg.Policy == nil {
		return nil, errors.New("guard: the " + string(cfg.Family) + " confine but no sandboxpolicy.Service is composed")
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	var unattended *sandbox.Unattended
	if u, ok := cfg.Approver.(sandbox.Unattended); ok {
		unattended = &u
	}
	return &Guard{
		family: cfg.Family, policy: cfg.Policy, confines: cfg.Confines,
		approver: cfg.Approver, unattended: unattended, unconfined: cfg.Unconfined,
		hosts: cfg.Hosts && cfg.Confines && cfg.Family == sandbox.Commands,
		sink:  cfg.Sink, log: log.Named("audit"),
	}, nil
}

// Confines reports whether the family's calls run under the policy (and so
// may escalate).
func (g *Guard) Confines() bool { return g.confines }

// Body is the body of one guarded call: what the tool does once its
// arguments are an object of known keys.
type Body func(ctx context.Context, c *Call) tool.Result

// Call is one guarded call: the front end's call, its arguments decoded as
// an object whose every key the tool's schema declares, and the guard.
type Call struct {
	tool.Call
	// Session is the session the call runs in (session.FromContext of the
	// handler's context), nil for a call with none.
	Session *session.Session
	// Args maps each argument the call gave to its raw JSON value.
	Args map[string]json.RawMessage
	tool string
	g    *Guard
	// rec is the call's audit record while it runs (also in the body's
	// context: audit.FromContext).
	rec *audit.Entry
}

// Standing returns the call's policy without escalation for the guard's
// family (its session's mode and grants for this family only), or nil when
// the family does not confine. The first policy resolved is the mode the
// call's record says it ran under, unless an escalation replaces it.
func (c *Call) Standing() *sandbox.ExecutionPolicy {
	if !c.g.confines {
		return nil
	}
	p := c.g.policy.Resolve(c.Session, c.g.family, "")
	c.rec.Update(func(r *audit.Record) {
		if r.Mode == "" {
			r.Mode = string(p.Mode)
		}
	})
	// A call whose own approver can ask no one (its client declared no
	// elicitation) is asked nothing else (asker): its denials say so.
	if u, ok := c.Approver.(sandbox.Unasked); ok && c.g.unattended == nil {
		if v, none := u.Unasked(); none {
			p.Unasked = &v
		}
	}
	return &p
}

// Workspace returns the call's workspace root as the policy resolves it
// (whether or not the family confines), "" when there is none or no policy
// service is composed.
func (c *Call) Workspace() string {
	if c.g.policy == nil {
		return ""
	}
	return c.g.policy.Resolve(c.Session, c.g.family, "").WorkspaceRoot
}

// Tool returns t guarded: its input schema is closed (additionalProperties
// false), declares sandbox_permissions and justification when escalates is
// set and the family confines (and allow_hosts when its commands reach the
// network through the domain proxy), and its handler decodes the arguments
// strictly (Decode) before running body; a refused argument is an
// INVALID_ARGUMENT result naming it, and body is not run. Every call, run
// or refused, leaves one audit record (record.go): body's context carries
// it (audit.FromContext) for the family to annotate; but a call the sink
// refuses before it runs (audit.Admitter: its session wrote its share of
// the audit log) is refused with the sink's code, unrecorded but for the
// session's first such refusal. t's own Handler is ignored.
func (g *Guard) Tool(t tool.Tool, escalates bool, body Body) *tool.Tool {
	in := t.InputSchema
	if in == nil {
		in = &jsonschema.Schema{Type: "object"}
	}
	in = in.CloneSchemas()
	if in.Properties == nil {
		in.Properties = map[string]*jsonschema.Schema{}
	}
	if escalates && g.Confines() {
		g.addEscalationProps(in)
	}
	in.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	t.InputSchema = in
	known := make(map[string]bool, len(in.Properties))
	for name := range in.Properties {
		known[name] = true
	}
	order := in.PropertyOrder
	t.Handler = func(ctx context.Context, call tool.Call) tool.Result {
		sess := session.FromContext(ctx)
		rec, start := g.open(sess, t.Name, call)
		if res, refused := g.admit(rec); refused {
			return res
		}
		args, err := g.decode(call.Arguments, known, order, escalates)
		if err != nil {
			res := g.Fail(err, nil)
			g.close(rec, start, res)
			return res
		}
		res := body(audit.NewContext(ctx, rec), &Call{Call: call, Session: sess, Args: args, tool: t.Name, g: g, rec: rec})
		g.close(rec, start, res)
		return res
	}
	return &t
}

// addEscalationProps declares the escalation arguments in s.
func (g *Guard) addEscalationProps(s *jsonschema.Schema) {
	targets := make([]any, 0, 2)
	for _, m := range sandboxpolicy.EscalationTargets() {
		targets = append(targets, string(m))
	}
	s.Properties[argPermissions] = &jsonschema.Schema{
		Type: "string", Enum: targets,
		Description: "Ask the user to run exactly this " + g.family.Subject() + " once under a wider sandbox mode. Use only after a sandbox denial, with the narrowest wider mode that suffices.",
	}
	s.Properties[argJustification] = &jsonschema.Schema{
		Type:        "string",
		Description: "One sentence telling the user why this " + g.family.Subject() + " needs the wider mode. Required with sandbox_permissions.",
	}
	s.PropertyOrder = append(s.PropertyOrder, argPermissions, argJustification)
	if g.hosts {
		s.Properties[argHosts] = &jsonschema.Schema{
			Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(sandboxpolicy.MaxHosts),
			Description: "Ask the user to let exactly this command reach these network hosts (exact names, as a network denial named them) through the proxy. Use only after a network denial naming them; with justification, without sandbox_permissions.",
		}
		s.PropertyOrder = append(s.PropertyOrder, argHosts)
	}
}

package sandbox

import "context"

// The approval vocabulary: what an approver is asked about an escalation,
// and its answers. The policy service (sandboxpolicy.Escalate) asks; a front
// end implements Approver (the MCP server through elicitation, the CLI on a
// terminal).

// Family is what a session grant covers (issue 21): the file tools, or
// commands. A grant never reaches across: answering "allow for the session"
// to a file tool's prompt leaves how commands run unchanged, and the other
// way round.
type Family string

// The tool families.
const (
	FileTools Family = "file tools"
	Commands  Family = "commands"
)

// Valid reports whether f is one of the families.
func (f Family) Valid() bool { return f == FileTools || f == Commands }

// Subject returns the escalation hint's subject for f
// (SubjectCommand or SubjectOperation).
func (f Family) Subject() string {
	if f == Commands {
		return SubjectCommand
	}
	return SubjectOperation
}

// Outcome is an approver's answer.
type Outcome string

// The approver outcomes. AllowedForSession grants the requested mode
// to this call and, as the session's mode, to every later call of the
// session until it ends (issue 12, "Allow for this session").
const (
	AllowedOnce       Outcome = "allowed-once"
	AllowedForSession Outcome = "allowed-for-session"
	Rejected          Outcome = "rejected"
	Cancelled         Outcome = "cancelled"
	Unavailable       Outcome = "unavailable"
)

// ApprovalRequest is what an approver is asked: the tool, the
// requested mode, the model's justification, and Reason, the sentence
// `escalate sandbox to <mode>: <justification>`, plus what the call
// would do, so the prompt shows the truth (issue 12): the canonical target,
// the path as given, the operation and the boundary crossed.
type ApprovalRequest struct {
	// Family is what the call is (file tools or commands), and so what an
	// "allow for the session" answer covers.
	Family        Family
	Tool          string
	Mode          Mode
	Justification string
	Reason        string
	// Target is the canonical path the call would mutate (symlinks
	// resolved), so the user sees where the write lands; empty when the
	// caller has none.
	Target string
	// Command and Workdir are the shell command an exec call would run
	// and the directory it would start in; empty for file operations.
	Command string
	Workdir string
	// Given is the path as the call gave it, resolved lexically (its
	// display path); shown when it differs from Target.
	Given string
	// Operation says what the call would do and its size, e.g.
	// "write 12 bytes (the whole file)"; empty when the caller has none.
	Operation string
	// Boundary is the boundary the call crosses under the standing policy
	// (one of the Boundary* texts); empty when the caller has none.
	Boundary string
	// Hosts, when set, are the network hosts a command asks to reach
	// through the domain proxy (sandboxpolicy.EscalateHosts) instead of a
	// wider mode; Mode, Standing and SessionGrant are then empty.
	Hosts []string
	// Standing is the mode the call runs under without the escalation.
	Standing Mode
	// ReadRule, when set, makes the request the approval of one read of
	// Target, a path in the deny-read set (issue 24): the rule that
	// denies it, e.g. "~/.ssh (default)". Such an approval lets exactly
	// that one read through, in any mode, and records no session grant.
	ReadRule string
	// Reads are the deny-read paths (canonical; a directory's ending in
	// "/") a command asking for danger-full-access names (issue 24): the
	// prompt says it is a credential read, and only an allowed-once answer
	// makes exactly those readable to that one command: a file's content,
	// a directory's listing only (issue 35). Empty for any other request.
	Reads []string
	// SessionGrant is the mode an earlier "allow for this session" answer
	// gave the session's calls of Family, "" when none did; sandboxpolicy.Escalate
	// fills it in.
	SessionGrant Mode
}

// Approver asks a human to approve one escalation. It returns one of the four
// outcomes; an error means no answer was had (a timed-out prompt, a client
// that cannot show it, an answer that does not fit it) and fails the call,
// never approves it.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Outcome, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Outcome, error)

// Approve calls f; a nil f answers Unavailable (fail closed).
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Outcome, error) {
	if f == nil {
		return Unavailable, nil
	}
	return f(ctx, req)
}

// Unattended is the composed Approver of a process that can ask no one (a
// one-shot `harness call` without a terminal): it answers every request
// Unavailable, and a guard composed with it asks no other approver (a
// call's own included) and renders, in place of each escalation hint, the
// line Hint makes of the remedy that fits the denial, so a denied call
// says what to do instead of offering an escalation that would be refused.
type Unattended struct {
	// Why says why nothing can be asked, e.g. "harness call asks for
	// approval only on a terminal or with --approval prompt".
	Why string
	// Remedy says how to allow a denied write or command without an
	// approval, e.g. "to allow this, run it again with a wider --mode".
	Remedy string
	// HostsRemedy says how to let a command reach a host the network proxy
	// refused, e.g. "to allow a host, run it again with --allow-domain HOST".
	HostsRemedy string
	// ReadRemedy says how to read a path in the deny-read set.
	ReadRemedy string
}

// Approve answers Unavailable: there is no one to ask.
func (Unattended) Approve(context.Context, ApprovalRequest) (Outcome, error) {
	return Unavailable, nil
}

// Unasked is implemented by a call's approver that can tell, before it is
// asked, that no one will answer (an MCP client that declared no
// elicitation): Unasked then returns what the call's denials say instead
// of an escalation hint (ExecutionPolicy.Unasked), and true.
type Unasked interface {
	Unasked() (Unattended, bool)
}

// Hint is the line that replaces an escalation hint: "[sandbox: no
// escalation here: Why; remedy]".
func (u Unattended) Hint(remedy string) string {
	return "[sandbox: no escalation here: " + u.Why + "; " + remedy + "]"
}

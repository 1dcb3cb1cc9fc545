package sandboxpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// EscalationTargets returns the modes a call may ask to escalate to:
// workspace-write and danger-full-access. read-only is never a target.
func EscalationTargets() []sandbox.Mode {
	return []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess}
}

// wider returns the modes strictly wider than m: read-only ->
// [workspace-write, danger-full-access]; workspace-write ->
// [danger-full-access]; danger-full-access and unknown modes -> none.
func wider(m sandbox.Mode) []sandbox.Mode {
	switch m {
	case sandbox.ReadOnly:
		return []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess}
	case sandbox.WorkspaceWrite:
		return []sandbox.Mode{sandbox.DangerFullAccess}
	default:
		return nil
	}
}

// isWider reports whether requested is strictly wider than current.
func isWider(requested, current sandbox.Mode) bool {
	return slices.Contains(wider(current), requested)
}

// errInvalidEscalation is the class of the pairing errors of
// CheckEscalationArgs.
var errInvalidEscalation = errors.New("invalid escalation arguments")

type argError struct{ msg string }

func (e *argError) Error() string        { return e.msg }
func (e *argError) Is(target error) bool { return target == errInvalidEscalation }

// CheckEscalationArgs validates the pairing of a tool call's escalation
// arguments (X-07..X-10); empty strings mean absent. Both absent, or a
// permission with a non-blank justification, is nil; otherwise an error with
// the exact model-facing text. An unknown permission value is refused with
// the allowed values.
func CheckEscalationArgs(permissions, justification string) error {
	switch {
	case permissions == "" && justification == "":
		return nil
	case permissions == "":
		return &argError{"invalid escalation: justification is only valid together with sandbox_permissions"}
	case justification == "":
		return &argError{"invalid escalation: sandbox_permissions requires a justification"}
	case strings.TrimSpace(justification) == "":
		return &argError{"invalid justification: expected a non-empty sentence"}
	case !slices.Contains(EscalationTargets(), sandbox.Mode(permissions)):
		return &argError{fmt.Sprintf("invalid escalation: sandbox_permissions must be one of %s, got %q",
			strings.Join([]string{string(sandbox.WorkspaceWrite), string(sandbox.DangerFullAccess)}, ", "), permissions)}
	}
	return nil
}

// Outcome is an approver's answer.
type Outcome string

// The approver outcomes.
const (
	AllowedOnce Outcome = "allowed-once"
	Rejected    Outcome = "rejected"
	Cancelled   Outcome = "cancelled"
	Unavailable Outcome = "unavailable"
)

// ApprovalRequest is what an approver is asked: the session, the tool, the
// requested mode, the model's justification, and Reason, the sentence
// `escalate sandbox to <mode>: <justification>`.
type ApprovalRequest struct {
	Session       *session.Session
	Tool          string
	Mode          sandbox.Mode
	Justification string
	Reason        string
	// Target is the display path the call would mutate, so the user sees
	// what the approval is for; empty when the caller has none.
	Target string
	// Command and Workdir are the shell command an exec call would run
	// and the directory it would start in; empty for file operations.
	Command string
	Workdir string
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

// Codes of an EscalationError.
const (
	// CodeEscalationRefused: the escalation was not granted: not wider, no
	// approver or session, rejected, cancelled or unavailable (X-14..X-17).
	CodeEscalationRefused = "SANDBOX_ESCALATION_REFUSED"
	// CodeApprovalFailed: the approver returned no answer; Err says why.
	CodeApprovalFailed = "SANDBOX_APPROVAL_FAILED"
)

// EscalationError is every failure of Escalate: Code is CodeEscalationRefused
// or CodeApprovalFailed, Mode the requested mode, Message the exact
// model-facing sentence, Err the approver's error (CodeApprovalFailed only).
type EscalationError struct {
	Code    string
	Mode    sandbox.Mode
	Message string
	Err     error
}

// Error returns Message, followed by Err's text when there is one.
func (e *EscalationError) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the approver's error.
func (e *EscalationError) Unwrap() error { return e.Err }

func refused(m sandbox.Mode, format string, args ...any) error {
	return &EscalationError{Code: CodeEscalationRefused, Mode: m, Message: fmt.Sprintf(format, args...)}
}

// Escalate runs the escalation ladder for one call and returns the granted
// mode (X-13..X-18). req.Mode is the requested mode, req.Target (optional)
// the path the call would mutate; Reason is filled in. In order, failing
// closed at each step: the requested mode must be strictly wider than
// effective (else the approver is never asked); an approver must be composed
// (nil is "no approval service"); the call must have a session to route
// through; then the approver is asked and its outcome mapped: allowed-once
// grants the requested mode; rejected, cancelled and unavailable are
// refusals with the exact texts. Every failure is an *EscalationError: a
// refusal has CodeEscalationRefused; an approver error or an unknown outcome
// has CodeApprovalFailed. subject is sandbox.SubjectOperation or
// sandbox.SubjectCommand.
func Escalate(ctx context.Context, approver Approver, req ApprovalRequest, subject string, effective sandbox.Mode) (sandbox.Mode, error) {
	sess, requested := req.Session, req.Mode
	if !isWider(requested, effective) {
		return "", refused(requested, "sandbox escalation to %q is not strictly wider than this call's current %q mode", requested, effective)
	}
	if approver == nil {
		return "", refused(requested, "sandbox escalation to %q requires approval, but no approval service is composed", requested)
	}
	if sess == nil {
		return "", refused(requested, "sandbox escalation to %q requires approval, but the call has no agent to route it through", requested)
	}
	req.Reason = "escalate sandbox to " + string(requested) + ": " + req.Justification
	out, err := approver.Approve(ctx, req)
	if err != nil {
		return "", &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: fmt.Sprintf("sandbox escalation to %q: approval failed", requested), Err: err}
	}
	switch out {
	case AllowedOnce:
		return requested, nil
	case Rejected:
		return "", refused(requested, "the user rejected escalating this %s to %q", subject, requested)
	case Cancelled:
		return "", refused(requested, "approval for escalating to %q was cancelled", requested)
	case Unavailable:
		return "", refused(requested, "sandbox escalation to %q requires approval, but no approval channel is available", requested)
	default:
		return "", &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: fmt.Sprintf("sandbox escalation to %q: unknown approval outcome %q", requested, out)}
	}
}

// Printable returns s with control characters (terminal escapes, carriage
// returns, newlines) replaced by spaces, for showing a model-written
// justification to a user.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

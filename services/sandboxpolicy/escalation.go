package sandboxpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/dsh-go/harness/services/session"
)

// EscalationTargets returns the modes a call may ask to escalate to:
// workspace-write and danger-full-access. read-only is never a target.
func EscalationTargets() []Mode { return []Mode{WorkspaceWrite, DangerFullAccess} }

// Wider returns the modes strictly wider than m: read-only ->
// [workspace-write, danger-full-access]; workspace-write ->
// [danger-full-access]; danger-full-access and unknown modes -> none.
func Wider(m Mode) []Mode {
	switch m {
	case ReadOnly:
		return []Mode{WorkspaceWrite, DangerFullAccess}
	case WorkspaceWrite:
		return []Mode{DangerFullAccess}
	default:
		return nil
	}
}

// IsWider reports whether requested is strictly wider than current.
func IsWider(requested, current Mode) bool { return slices.Contains(Wider(current), requested) }

// Subjects of the escalation hint.
const (
	SubjectOperation = "operation" // a filesystem tool call
	SubjectCommand   = "command"   // a shell command
)

// DenialMarker is the model-facing line of a denied call:
// `[sandbox: file access denied under <mode> mode]`.
func DenialMarker(m Mode) string {
	return "[sandbox: file access denied under " + string(m) + " mode]"
}

// EscalationHint is the model-facing line that says how to escalate.
func EscalationHint(subject string) string {
	return "[sandbox: escalation available — retry this exact " + subject +
		" once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
}

// ErrInvalidEscalation is the class of the pairing errors of
// CheckEscalationArgs; test with errors.Is.
var ErrInvalidEscalation = errors.New("invalid escalation arguments")

type argError struct{ msg string }

func (e *argError) Error() string        { return e.msg }
func (e *argError) Is(target error) bool { return target == ErrInvalidEscalation }

// CheckEscalationArgs validates the pairing of a tool call's escalation
// arguments (X-07..X-10); empty strings mean absent. Both absent, or a
// permission with a non-blank justification, is nil; otherwise an error with
// the exact model-facing text, satisfying errors.Is(err, ErrInvalidEscalation).
// An unknown permission value is refused with the allowed values.
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
	case !slices.Contains(EscalationTargets(), Mode(permissions)):
		return &argError{fmt.Sprintf("invalid escalation: sandbox_permissions must be one of %s, got %q",
			strings.Join([]string{string(WorkspaceWrite), string(DangerFullAccess)}, ", "), permissions)}
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
	Mode          Mode
	Justification string
	Reason        string
	// Target is the display path the call would mutate, so the user sees
	// what the approval is for; empty when the caller has none.
	Target string
}

// Approver asks a human to approve one escalation. It returns one of the four
// outcomes; an error is treated as a failure of the call, never as approval.
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

// ErrEscalationRefused is the class of every refusal of ApproveEscalation;
// test with errors.Is.
var ErrEscalationRefused = errors.New("sandbox escalation refused")

type refusal struct{ msg string }

func (e *refusal) Error() string        { return e.msg }
func (e *refusal) Is(target error) bool { return target == ErrEscalationRefused }

// ApproveEscalation runs the escalation choreography for one call and
// returns the granted mode (X-13..X-18). In order, failing closed at each
// step: requested must be strictly wider than effective (else the approver is
// never asked); an approver must be composed (nil is "no approval service");
// the call must have a session to route through; then the approver is asked
// and its outcome mapped: allowed-once grants requested; rejected, cancelled
// and unavailable are refusals with the exact texts; an unknown outcome or an
// approver error is an error. Refusals satisfy
// errors.Is(err, ErrEscalationRefused). subject is SubjectOperation or
// SubjectCommand.
func ApproveEscalation(ctx context.Context, approver Approver, sess *session.Session, tool, subject string, requested, effective Mode, justification string) (Mode, error) {
	return Escalate(ctx, approver, ApprovalRequest{Session: sess, Tool: tool, Mode: requested, Justification: justification}, subject, effective)
}

// Escalate is ApproveEscalation for a request built by the caller: req.Mode
// is the requested mode, req.Target (optional) the path the call would
// mutate; Reason is filled in.
func Escalate(ctx context.Context, approver Approver, req ApprovalRequest, subject string, effective Mode) (Mode, error) {
	sess, requested := req.Session, req.Mode
	if !IsWider(requested, effective) {
		return "", &refusal{fmt.Sprintf("sandbox escalation to %q is not strictly wider than this call's current %q mode", requested, effective)}
	}
	if approver == nil {
		return "", &refusal{fmt.Sprintf("sandbox escalation to %q requires approval, but no approval service is composed", requested)}
	}
	if sess == nil {
		return "", &refusal{fmt.Sprintf("sandbox escalation to %q requires approval, but the call has no agent to route it through", requested)}
	}
	req.Reason = "escalate sandbox to " + string(requested) + ": " + req.Justification
	out, err := approver.Approve(ctx, req)
	if err != nil {
		return "", fmt.Errorf("sandbox escalation to %q: approval failed: %w", requested, err)
	}
	switch out {
	case AllowedOnce:
		return requested, nil
	case Rejected:
		return "", &refusal{fmt.Sprintf("the user rejected escalating this %s to %q", subject, requested)}
	case Cancelled:
		return "", &refusal{fmt.Sprintf("approval for escalating to %q was cancelled", requested)}
	case Unavailable:
		return "", &refusal{fmt.Sprintf("sandbox escalation to %q requires approval, but no approval channel is available", requested)}
	default:
		return "", fmt.Errorf("sandbox escalation to %q: unknown approval outcome %q", requested, out)
	}
}

// UnavailableError says a sandbox mode cannot be enforced on this platform
// . Code is always "SANDBOX_UNAVAILABLE".
type UnavailableError struct {
	Mode   Mode
	Detail string
}

// Code returns "SANDBOX_UNAVAILABLE".
func (e *UnavailableError) Code() string { return "SANDBOX_UNAVAILABLE" }

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("sandbox mode %q is unavailable here; only %s runs without the sandbox", e.Mode, DangerFullAccess)
	if e.Detail != "" {
		msg += ". Runner failure: " + e.Detail
	}
	return msg
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

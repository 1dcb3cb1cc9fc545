package sandboxpolicy

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// EscalateRead asks approver for one read of req.Target, a path in the
// deny-read set (issue 24; req.ReadRule names the rule): the call's own
// escalation to danger-full-access, the only mode that may ask. Unlike
// Escalate it asks whatever the standing mode (the deny-read set holds
// under danger-full-access too, and under a session's grant of it) and
// records nothing: an "allow for the session" answer allows this one read
// only, as the prompt says (ReadPrompt). A session whose ceiling
// (SetCeiling) is narrower than danger-full-access is refused without
// asking. nil means the user allowed the read. Errors: *EscalationError:
// CodeEscalationRefused for another requested mode, a ceiling below it,
// no approver, no session, a rejection, a cancellation, no channel;
// CodeApprovalFailed for an approver error or an unknown outcome.
func EscalateRead(ctx context.Context, approver sandbox.Approver, sess *session.Session, req sandbox.ApprovalRequest, standing sandbox.Mode) error {
	requested := req.Mode
	switch {
	case requested != sandbox.DangerFullAccess:
		return refused(requested, "a read of a path in the deny-read set can be approved only with sandbox_permissions=%q, got %q", sandbox.DangerFullAccess, requested)
	case req.ReadRule == "":
		return &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: "a read escalation must name the deny-read rule it crosses"}
	}
	if c, beyond := beyondCeiling(sess, requested); beyond {
		return ceilingRefused(requested, c, "reading a path in the deny-read set (it needs "+strconv.Quote(string(requested))+")")
	}
	switch {
	case approver == nil:
		return refused(requested, "reading a path in the deny-read set requires approval, but no approval service is composed")
	case sess == nil:
		return refused(requested, "reading a path in the deny-read set requires approval, but the call has no agent to route it through")
	}
	req.Reason = "read a path in the deny-read set: " + req.Justification
	req.Standing = standing
	req.SessionGrant, _ = SessionGrant(sess, req.Family)
	out, err := approver.Approve(ctx, req)
	if err != nil {
		return &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: "read of a path in the deny-read set: approval failed", Err: err}
	}
	switch out {
	case sandbox.AllowedOnce, sandbox.AllowedForSession:
		// Once either way: a credential read is never allowed for the
		// session.
		return nil
	case sandbox.Rejected:
		return refused(requested, "the user rejected reading %s", strconv.Quote(req.Target))
	case sandbox.Cancelled:
		return refused(requested, "approval for reading %s was cancelled", strconv.Quote(req.Target))
	case sandbox.Unavailable:
		return refused(requested, "reading a path in the deny-read set requires approval, but no approval channel is available")
	default:
		return &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: fmt.Sprintf("read of a path in the deny-read set: unknown approval outcome %q", out)}
	}
}

// ReadTargetChanged returns the error of an approved read whose file is no
// longer the one the prompt showed (shown): the path resolves, or the opened
// file's real path is, now instead; nothing was read.
func ReadTargetChanged(shown, now string) error {
	return &EscalationError{Code: CodeTargetChanged, Mode: sandbox.DangerFullAccess, Message: fmt.Sprintf(
		"the approved read was refused: its file changed after the approval (shown %s, now %s); nothing was read",
		strconv.Quote(shown), strconv.Quote(now))}
}

// readPrompt is Prompt for a credential read (req.ReadRule set): the tool,
// the canonical file and the path as given, that it is a credential read
// and which deny-read rule names it, that no sandbox mode lifts it, that an
// approval lets exactly this one read through and that "allow for the
// session" counts as once, and the cleaned justification.
func readPrompt(req sandbox.ApprovalRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The agent asks to run the %s tool to read %s", strconv.Quote(req.Tool), strconv.Quote(req.Target))
	if req.Given != "" && req.Given != req.Target {
		fmt.Fprintf(&b, " (given as %s)", strconv.Quote(req.Given))
	}
	fmt.Fprintf(&b, ". This is a credential read: the path is in the deny-read set (%s), which no sandbox mode lifts.", req.ReadRule)
	b.WriteString(" Allowing it lets exactly this one read of this one file through; allowing it for the session counts as once, for this read only, and later reads are asked again.")
	fmt.Fprintf(&b, " Its justification: %s", CleanJustification(req.Justification))
	return b.String()
}

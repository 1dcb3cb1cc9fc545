package guard

import (
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/tool"
)

// DeniedRead returns the result of a call the deny-read set refused under
// policy (issue 24), with fs.CodeReadDenied: the read marker of its mode
// (sandbox.ReadDenialMarker), detail (the refusal: which path, by which
// rule), the line saying a session grant does not lift the set when the
// mode is the user's grant, and how to ask for the read: with escalates,
// the hint to retry this exact call once under danger-full-access (the
// prompt asks the user for that one credential read); without it, that
// only a single read can be approved; under a session ceiling narrower
// than danger-full-access, that no read can be approved (it is refused
// without asking); under a sandbox.Unattended approver or a call that can ask no one (unattendedFor), its ReadRemedy
// (sandbox.Unattended.Hint). Then text, the call's own output, when there is any.
func (g *Guard) DeniedRead(policy sandbox.ExecutionPolicy, detail, text string, escalates bool) tool.Result {
	marker := sandbox.ReadDenialMarker(policy.Mode)
	msg := marker
	if detail != "" {
		msg += "\n" + detail
	}
	if policy.SessionGrant {
		msg += "\n" + readGrantLine(policy.Mode)
	}
	switch u := g.unattendedFor(&policy); {
	case u != nil:
		msg += "\n" + u.Hint(u.ReadRemedy)
	case policy.Ceiling != "" && policy.Ceiling != sandbox.DangerFullAccess:
		msg += "\n" + readCeilingHint(policy.Ceiling)
	case escalates:
		msg += "\n" + readEscalationHint(g.family.Subject())
	default:
		msg += "\n" + readNoEscalation
	}
	if text != "" {
		msg += "\n" + text
	}
	return denied(msg, fs.CodeReadDenied, marker)
}

// readGrantLine says that the session's grant of m does not lift the
// deny-read set.
func readGrantLine(m sandbox.Mode) string {
	return "[sandbox: this session runs under " + string(m) + ", which the user allowed for the session; that grant does not lift the deny-read set]"
}

// readEscalationHint is the line that says how to ask for one denied read;
// subject is sandbox.SubjectOperation or sandbox.SubjectCommand.
func readEscalationHint(subject string) string {
	return "[sandbox: escalation available — retry this exact " + subject + " once with sandbox_permissions=" +
		string(sandbox.DangerFullAccess) + " + justification; the approval prompt asks the user for this one credential read]"
}

// readNoEscalation follows a denied listing, search, stat or change of a
// path in the deny-read set: only one read of one file can be approved.
const readNoEscalation = "[sandbox: a path in the deny-read set is not listed, searched or changed by a file tool; only a read of one file can be approved: read it with sandbox_permissions=danger-full-access + justification]"

// readCeilingHint replaces the read hints under a session ceiling m
// narrower than danger-full-access, where sandboxpolicy.EscalateRead
// refuses without asking.
func readCeilingHint(m sandbox.Mode) string {
	return "[sandbox: no escalation available — a read of a path in the deny-read set needs " + string(sandbox.DangerFullAccess) +
		", beyond this session's widest mode " + string(m) + " (its principal's); it is refused without asking the user]"
}

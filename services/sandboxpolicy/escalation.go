package sandboxpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-go/harness/services/errcode"
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

// IsWider reports whether requested is strictly wider than current.
func IsWider(requested, current sandbox.Mode) bool {
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

// The boundaries a mutation the standing policy denies crosses, as an
// approval prompt names them (Boundary). A protected path inside a writable
// root is a boundary of its own: BoundaryProtected, followed by the rule
// that protects it.
const (
	BoundaryReadOnly    = "the read-only mode allows no writes"
	BoundaryNoWorkspace = "no workspace is set, so only the temp areas are writable"
	BoundaryOutside     = "outside the writable roots"
	BoundaryProtected   = "a protected path inside the writable root"
)

// Codes of an EscalationError.
const (
	// CodeEscalationRefused: the escalation was not granted: not wider, no
	// approver or session, rejected, cancelled or unavailable (X-14..X-17).
	CodeEscalationRefused errcode.Code = "SANDBOX_ESCALATION_REFUSED"
	// CodeApprovalFailed: the approver returned no answer; Err says why.
	CodeApprovalFailed errcode.Code = "SANDBOX_APPROVAL_FAILED"
	// CodeTargetChanged: after the approval the call's path resolved to
	// another target than the one the prompt showed; nothing was mutated.
	CodeTargetChanged errcode.Code = "SANDBOX_TARGET_CHANGED"
)

// TargetChanged returns the error of an approved call whose path, resolved
// again after the approval, lands on now instead of the shown target.
func TargetChanged(m sandbox.Mode, shown, now string) error {
	return &EscalationError{Code: CodeTargetChanged, Mode: m, Message: fmt.Sprintf(
		"the approved call was refused: its target changed after the approval (shown %s, now %s); nothing was written",
		strconv.Quote(shown), strconv.Quote(now))}
}

// WorkdirChanged returns the error of an approved command whose working
// directory, checked again after the approval, is no longer the directory
// the prompt showed (shown); now says what it is instead.
func WorkdirChanged(m sandbox.Mode, shown, now string) error {
	return &EscalationError{Code: CodeTargetChanged, Mode: m, Message: fmt.Sprintf(
		"the approved command was refused: its working directory changed after the approval (shown %s, now %s); nothing was run",
		strconv.Quote(shown), now)}
}

// EscalationError is every failure of Escalate: Code is CodeEscalationRefused
// or CodeApprovalFailed, Mode the requested mode, Message the exact
// model-facing sentence, Err the approver's error (CodeApprovalFailed only).
type EscalationError struct {
	Code    errcode.Code
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

// Escalate runs the escalation ladder for one call of sess and returns the
// granted mode (X-13..X-18). req.Mode is the requested mode, req.Target (optional)
// the path the call would mutate; Reason, Standing and SessionGrant are
// filled in. In order, failing
// closed at each step: the requested mode must be within the session's
// ceiling (SetCeiling: the principal's widest mode; beyond it the approver
// is never asked); it must be strictly wider than
// effective (else the approver is never asked); an approver must be composed
// (nil is "no approval service"); the call must have a session to route
// through; then the approver is asked and its outcome mapped: allowed-once
// grants the requested mode; rejected, cancelled and unavailable are
// refusals with the exact texts; allowed-for-session grants it and also
// records it as the session's mode for req.Family, marked as the user's
// grant, so later calls of that family (only) run under it (issue 21).
// Every failure is an *EscalationError: a refusal has CodeEscalationRefused;
// a request without a valid Family, an approver error or an unknown outcome
// has CodeApprovalFailed.
func Escalate(ctx context.Context, approver sandbox.Approver, sess *session.Session, req sandbox.ApprovalRequest, effective sandbox.Mode) (sandbox.Mode, error) {
	requested := req.Mode
	if !req.Family.Valid() {
		return "", &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: fmt.Sprintf(
			"sandbox escalation to %q: the request names no tool family (%q), so a session grant could not say what it covers", requested, req.Family)}
	}
	if c, beyond := beyondCeiling(sess, requested); beyond {
		return "", ceilingRefused(requested, c, fmt.Sprintf("sandbox escalation to %q", requested))
	}
	if !IsWider(requested, effective) {
		return "", refused(requested, "sandbox escalation to %q is not strictly wider than this call's current %q mode", requested, effective)
	}
	if approver == nil {
		return "", refused(requested, "sandbox escalation to %q requires approval, but no approval service is composed", requested)
	}
	if sess == nil {
		return "", refused(requested, "sandbox escalation to %q requires approval, but the call has no agent to route it through", requested)
	}
	req.Reason = "escalate sandbox to " + string(requested) + ": " + req.Justification
	req.Standing = effective
	req.SessionGrant, _ = SessionGrant(sess, req.Family)
	out, err := approver.Approve(ctx, req)
	if err != nil {
		return "", &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: fmt.Sprintf("sandbox escalation to %q: approval failed", requested), Err: err}
	}
	switch out {
	case sandbox.AllowedOnce:
		return requested, nil
	case sandbox.AllowedForSession:
		if err := sess.Append(session.Event{Type: eventMode, Data: modeEvent{Mode: requested, Granted: true, Family: req.Family}}); err != nil {
			return "", &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: fmt.Sprintf("sandbox escalation to %q: the session grant was not recorded", requested), Err: err}
		}
		return requested, nil
	case sandbox.Rejected:
		return "", refused(requested, "the user rejected escalating this %s to %q", req.Family.Subject(), requested)
	case sandbox.Cancelled:
		return "", refused(requested, "approval for escalating to %q was cancelled", requested)
	case sandbox.Unavailable:
		return "", refused(requested, "sandbox escalation to %q requires approval, but no approval channel is available", requested)
	default:
		return "", &EscalationError{Code: CodeApprovalFailed, Mode: requested, Message: fmt.Sprintf("sandbox escalation to %q: unknown approval outcome %q", requested, out)}
	}
}

// JustificationMax is the number of characters of a justification a prompt
// shows; the rest is cut and the cut marked.
const JustificationMax = 300

// CommandMax is the number of characters of a command a prompt shows; the
// rest is cut, and the cut says how long the whole command is (issue 21).
const CommandMax = 500

// CleanJustification returns the model's justification as a prompt may show
// it (issue 12): every blank character (blank: controls, formats such as
// bidirectional overrides and zero-width characters, separators, combining
// marks, default ignorable code points) becomes a space, runs of spaces
// collapse, and past JustificationMax characters the text is cut and ends
// with "… [N more characters cut]".
func CleanJustification(s string) string {
	out, cut := collapse(s, JustificationMax)
	if cut > 0 {
		out += fmt.Sprintf("… [%d more characters cut]", cut)
	}
	return out
}

// CleanCommand returns a shell command as a prompt may show it, to be
// quoted with strconv.Quote (issue 21): blank characters (blank) collapse as
// CleanJustification collapses them (so 5,000 spaces cannot push the rest
// of a command out of view), except that a run holding control characters
// (Cc: a newline, a carriage return, a tab, ESC) or line and paragraph
// separators keeps each distinct one, in order, in place of the run (issue
// 24: a newline starts another command, and must not pass for a space
// between arguments; strconv.Quote shows it as \n, a literal backslash as
// \\); past CommandMax characters the rest is cut, the cut ending with
// "… [cut: the command is N characters long]", N counting the command as
// given.
func CleanCommand(s string) string {
	out, cut := collapseKeeping(s, CommandMax, shown)
	if cut > 0 {
		out += fmt.Sprintf("… [cut: the command is %d characters long]", utf8.RuneCountInString(s))
	}
	return out
}

// shown reports whether a blank rune r is kept (for quoting to escape) in a
// shown command: a control, line or paragraph separator.
func shown(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp)
}

// blank reports whether r shows as nothing, or as a blank, on a terminal or
// in a client's dialog: an invalid byte, a control (Cc), format (Cf: bidi
// overrides, zero-width characters), line or paragraph separator, a space,
// a combining mark (Mn, Me: U+034F, variation selectors), a default
// ignorable code point (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0)
// or the blank braille pattern U+2800 (issue 21: 500 invisible characters
// must not push the rest of a command past the cut).
func blank(r rune) bool {
	return r == utf8.RuneError || r == '\u2800' || unicode.IsSpace(r) ||
		unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Mn, unicode.Me,
			unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// collapse turns every blank character of s (blank) into one space per
// run, trims the ends, and keeps at most limit characters; cut is how many
// non-space characters and runs were left out.
func collapse(s string, limit int) (out string, cut int) {
	return collapseKeeping(s, limit, func(rune) bool { return false })
}

// collapseKeeping is collapse where a run of blanks holding characters
// keep reports true becomes those characters (each distinct one once, in
// order of appearance) instead of a space.
func collapseKeeping(s string, limit int, keep func(rune) bool) (out string, cut int) {
	var b strings.Builder
	n := 0
	emit := func(run []rune) {
		for _, r := range run {
			if n >= limit {
				cut++
				continue
			}
			b.WriteRune(r)
			n++
		}
	}
	var kept []rune // the current run's kept characters
	inRun := false
	flush := func() {
		if !inRun {
			return
		}
		if len(kept) == 0 {
			kept = append(kept, ' ')
		}
		if n > 0 || kept[0] != ' ' {
			emit(kept)
		}
		kept, inRun = kept[:0], false
	}
	for _, r := range s {
		if blank(r) {
			inRun = true
			if keep(r) && !slices.Contains(kept, r) {
				kept = append(kept, r)
			}
			continue
		}
		flush()
		emit([]rune{r})
	}
	if len(kept) > 0 {
		flush() // a trailing run of kept characters is shown
	}
	return strings.Trim(b.String(), " "), cut
}

// Prompt returns the question an approver shows a person for req, in one
// paragraph: what the call would do (Operation) to which canonical target,
// the path as given when it differs, the command (CleanCommand) and its
// directory, the boundary it crosses under the standing mode, the requested
// mode and what it means for a command (with the deny-read paths it names,
// a credential read: credentialRead), the session's earlier grant if
// any, what "allow for the session" would cover (issue 21), and the cleaned
// justification. A request for network hosts (req.Hosts) names them,
// quoted, in place of the mode. Paths are quoted with every control or
// non-printing character escaped. A credential read (req.ReadRule set)
// has its own question (see EscalateRead).
func Prompt(req sandbox.ApprovalRequest) string {
	if req.ReadRule != "" {
		return readPrompt(req)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The agent asks to run the %s tool", strconv.Quote(req.Tool))
	if req.Operation != "" {
		fmt.Fprintf(&b, " to %s", req.Operation)
	}
	if req.Target != "" {
		fmt.Fprintf(&b, " on %s", strconv.Quote(req.Target))
		if req.Given != "" && req.Given != req.Target {
			fmt.Fprintf(&b, " (given as %s)", strconv.Quote(req.Given))
		}
	}
	if req.Command != "" {
		fmt.Fprintf(&b, " with the command %s in %s", strconv.Quote(CleanCommand(req.Command)), strconv.Quote(req.Workdir))
	}
	b.WriteString(".")
	if len(req.Hosts) > 0 {
		fmt.Fprintf(&b, " It asks to let this command reach the network hosts %s through harness's proxy (HTTP, HTTPS and SOCKS5 to exactly those names; every other name stays refused) and changes nothing else.", quoteAll(req.Hosts))
		if local := localHosts(req.Hosts); len(local) > 0 {
			fmt.Fprintf(&b, " Note: %s is not the public Internet but this machine's own network or one it reaches (the services listening on the host harness runs on, its loopback, private, shared or link-local addresses: a LAN, a VPN, a tailnet), not the command's sandbox.", strings.Join(local, ", "))
		}
		b.WriteString(" Allowing it for the session lets every later command of this session reach those hosts without asking.")
		fmt.Fprintf(&b, " Its justification: %s", CleanJustification(req.Justification))
		return b.String()
	}
	if req.Boundary != "" {
		fmt.Fprintf(&b, " Under the current %s mode this is refused: %s.", req.Standing, req.Boundary)
	}
	fmt.Fprintf(&b, " It asks to run under the %s sandbox mode", req.Mode)
	switch {
	case req.Family == sandbox.Commands && req.Mode == sandbox.DangerFullAccess && len(req.Reads) > 0:
		b.WriteString(", with no sandbox: the command may change any file the server's user can and reach the network. ")
		b.WriteString(credentialRead(req.Reads))
	case req.Family == sandbox.Commands && req.Mode == sandbox.DangerFullAccess:
		b.WriteString(", with no sandbox: the command may change any file the server's user can and reach the network; the paths the deny-read set hides (credentials) stay hidden from it.")
	case req.Family == sandbox.Commands:
		b.WriteString(", which lets the command write in the workspace; its network access stays as configured.")
	case req.Mode == sandbox.DangerFullAccess:
		b.WriteString(", with no sandbox: the call may change any file the server's user can.")
	default:
		b.WriteString(".")
	}
	if req.SessionGrant != "" {
		fmt.Fprintf(&b, " This session's %s already run under %s, which you allowed for the session.", req.Family, req.SessionGrant)
	}
	if req.Family != "" {
		other := sandbox.Commands
		if req.Family == sandbox.Commands {
			other = sandbox.FileTools
		}
		fmt.Fprintf(&b, " Allowing it for the session lets every later call of the %s in this session run under %s without asking; %s are not covered.", req.Family, req.Mode, other)
	}
	fmt.Fprintf(&b, " Its justification: %s", CleanJustification(req.Justification))
	return b.String()
}

// ReadsMax is how many of a command's deny-read paths a prompt names; the
// rest are counted, and stay hidden whatever the answer.
const ReadsMax = 5

// NamedReads returns the deny-read paths of reads a credential-read prompt
// names (the first ReadsMax): the only ones an approval given once makes
// readable (exec.Request.LiftedReads; a directory, with its trailing
// slash, its listing only).
func NamedReads(reads []string) []string {
	return reads[:min(len(reads), ReadsMax)]
}

// credentialRead is the prompt's sentence for a command that names
// deny-read paths (issues 24, 35): they are named (quoted, controls
// escaped; at most ReadsMax, the rest counted), the read is called a
// credential read, what an approval given once makes readable is listed
// (a file's content; a directory, named with a trailing slash, its
// entries' names only), and what each answer does to deny-read is said.
func credentialRead(reads []string) string {
	shown := NamedReads(reads)
	quoted := make([]string, 0, len(shown))
	readable := make([]string, 0, len(shown))
	for _, r := range shown {
		q := strconv.Quote(r)
		quoted = append(quoted, q)
		if strings.HasSuffix(r, "/") {
			readable = append(readable, "the directory "+q+": the names of its entries only, not what they hold (a file in it is readable only when the command names it)")
		} else {
			readable = append(readable, "the file "+q)
		}
	}
	more := ""
	if len(reads) > len(shown) {
		more = fmt.Sprintf(" (and %d more, which stay hidden)", len(reads)-len(shown))
	}
	return fmt.Sprintf("This is a credential read: the command names %s%s, which the deny-read set hides from every tool and command. "+
		"Allowing it once makes exactly these readable for this one run: %s (every other deny-read path stays hidden); allowing it for the session does not (they stay hidden).",
		strings.Join(quoted, ", "), more, strings.Join(readable, "; "))
}

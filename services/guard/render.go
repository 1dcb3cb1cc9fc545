package guard

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
)

// Remedy suffixes (spec "T-remedies").
const (
	staleRemedy       = " — re-read the file, then retry"
	notObservedRemedy = " — read the file, then retry"
	// notTextRemedy follows a read refused as not text (neither UTF-8 nor
	// UTF-16 with a byte-order mark): the file cannot be shown, but a
	// whole-file write may replace it.
	notTextRemedy = " — it cannot be shown as text; a whole-file write may replace it"
)

// Fail renders a failed call (T-54, T-94, remedies) under policy (nil when
// the call had none yet): a sandbox denial (*fs.Error with
// fs.CodeSandboxDenied) becomes Denied's lines, a deny-read refusal
// (fs.CodeReadDenied) DeniedRead's (escalating when it refused a read); a stale or not-observed
// error, or a read refused as not text, gets its remedy; everything else
// keeps its message. The code is the error's own: the code of an *fs.Error
// or an *exec.Error, of a *sandboxpolicy.EscalationError,
// errcode.InvalidArgument for an *ArgError, none otherwise. The result keeps
// err for the front end (an approval asked in the 2026-07-28 era travels in
// it).
func (g *Guard) Fail(err error, policy *sandbox.ExecutionPolicy) tool.Result {
	res := g.render(err, policy)
	res.Err = err
	return res
}

func (g *Guard) render(err error, policy *sandbox.ExecutionPolicy) tool.Result {
	if fe, ok := errors.AsType[*fs.Error](err); ok {
		return g.renderFS(fe, policy)
	}
	if ee, ok := errors.AsType[*exec.Error](err); ok {
		return tool.ErrorResult(ee.Message, ee.Code)
	}
	var code errcode.Code
	if ee, ok := errors.AsType[*sandboxpolicy.EscalationError](err); ok {
		code = ee.Code
	} else if _, ok := errors.AsType[*ArgError](err); ok {
		code = errcode.InvalidArgument
	}
	return tool.ErrorResult(err.Error(), code)
}

func (g *Guard) renderFS(fe *fs.Error, policy *sandbox.ExecutionPolicy) tool.Result {
	msg := fe.Error()
	switch fe.Code {
	case fs.CodeSandboxDenied:
		mode := fe.Mode
		if policy != nil {
			mode = policy.Mode
		}
		return denied(g.denial(mode, policy, ""), fe.Code, sandbox.DenialMarker(mode))
	case fs.CodeReadDenied:
		p := sandbox.ExecutionPolicy{Mode: fe.Mode}
		if policy != nil {
			p = *policy
		}
		return g.DeniedRead(p, msg, "", fe.Op == "read" && g.confines)
	case fs.CodeStaleVersion:
		msg += staleRemedy
	case fs.CodeNotObserved:
		msg += notObservedRemedy
	case fs.CodeNotText:
		if fe.Op == "read" {
			msg += notTextRemedy
		}
	}
	return tool.ErrorResult(msg, fe.Code)
}

// Denied returns the result of a call the sandbox refused under policy,
// with fs.CodeSandboxDenied: the denial marker of its mode, the
// no-workspace line when workspace-write has no workspace root, the
// session-grant line when the mode is the user's grant for this family,
// detail (what the refusal was, "" for none), and the escalation hint of
// the family's subject; then text, the call's own output, when there
// is any.
func (g *Guard) Denied(policy sandbox.ExecutionPolicy, detail, text string) tool.Result {
	msg := g.denial(policy.Mode, &policy, detail)
	if text != "" {
		msg += "\n" + text
	}
	return denied(msg, fs.CodeSandboxDenied, sandbox.DenialMarker(policy.Mode))
}

// CodeNetworkDenied marks a command the sandbox refused the network
// (DeniedNetwork).
const CodeNetworkDenied errcode.Code = "SANDBOX_NETWORK_DENIED"

// DeniedNetwork returns the result of a command the sandbox refused the
// network under policy, with CodeNetworkDenied: Denied's lines, with the
// network marker (sandbox.NetworkDenialMarker) in place of the file
// marker and without the no-workspace line (which is about writes).
func (g *Guard) DeniedNetwork(policy sandbox.ExecutionPolicy, detail, text string) tool.Result {
	marker := sandbox.NetworkDenialMarker(policy.Mode)
	msg := g.lines(marker, &policy, detail, false)
	if text != "" {
		msg += "\n" + text
	}
	return denied(msg, CodeNetworkDenied, marker)
}

// DeniedHosts returns the result of a command under policy whose
// connections the domain proxy refused (refused: the proxy's record, never
// the command's output; more: the refusals it counted past them), with
// CodeNetworkDenied: the network marker (sandbox.NetworkDenialMarker), one
// line naming each refused host and port, quoted, with the proxy's reason
// (the first maxRefusedLines; a line counts the rest), and the hint to
// retry asking for those hosts, at most sandboxpolicy.MaxHosts (what one
// allow_hosts may name), with allow_hosts (when the guard declares it; else
// the escalation hint), or under a session ceiling that allows neither (a
// read-only one for hosts) the line saying so, or under a
// sandbox.Unattended approver (or a call that can ask no one: unattendedFor) its HostsRemedy (Remedy when the guard does
// not declare allow_hosts); then text, the command's
// own output.
func (g *Guard) DeniedHosts(policy sandbox.ExecutionPolicy, refused []exec.RefusedHost, more int, text string) tool.Result {
	marker := sandbox.NetworkDenialMarker(policy.Mode)
	var b strings.Builder
	b.WriteString(marker)
	hosts := make([]string, 0, min(len(refused), sandboxpolicy.MaxHosts))
	for i, r := range refused {
		if i == maxRefusedLines {
			more += len(refused) - i
			break
		}
		where := " port " + strconv.Itoa(r.Port)
		if r.Port == 0 {
			where = " (its name lookup)"
		}
		b.WriteString("\n(the network proxy refused " + strconv.Quote(r.Host) + where + ": " + strconv.Quote(r.Reason) + ")")
		if len(hosts) < sandboxpolicy.MaxHosts && !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	if more > 0 {
		b.WriteString("\n(and " + strconv.Itoa(more) + " more refusals)")
	}
	switch u := g.unattendedFor(&policy); {
	case u != nil && g.hosts:
		b.WriteString("\n" + u.Hint(u.HostsRemedy))
	case u != nil:
		b.WriteString("\n" + u.Hint(u.Remedy))
	case g.hosts && policy.Ceiling == sandbox.ReadOnly:
		b.WriteString("\n" + hostsCeilingHint)
	case g.hosts:
		b.WriteString("\n" + sandbox.HostsHint(hosts))
	case atCeiling(policy):
		b.WriteString("\n" + sandbox.CeilingHint(policy.Ceiling))
	default:
		b.WriteString("\n" + sandbox.EscalationHint(g.family.Subject()))
	}
	if text != "" {
		b.WriteString("\n" + text)
	}
	return denied(b.String(), CodeNetworkDenied, marker)
}

// maxRefusedLines is how many refusals a network denial names, one line
// each; the rest are counted.
const maxRefusedLines = 20

// hostsCeilingHint replaces the allow_hosts hint under a read-only session
// ceiling, where sandboxpolicy.EscalateHosts refuses without asking.
const hostsCeilingHint = "[sandbox: no escalation available — this session's widest mode is read-only (its principal's), which reaches no network host beyond the configured names; allow_hosts is refused without asking the user]"

// denied is the error result of a call the sandbox refused: msg with code,
// and marker, the denial's marker line, for the call's record.
func denied(msg string, code errcode.Code, marker string) tool.Result {
	res := tool.ErrorResult(msg, code)
	res.Marker = marker
	return res
}

func (g *Guard) denial(mode sandbox.Mode, policy *sandbox.ExecutionPolicy, detail string) string {
	return g.lines(sandbox.DenialMarker(mode), policy, detail, true)
}

// lines returns a denial's text: marker, the no-workspace line (when
// writes is set), detail, the session-grant line and the escalation hint,
// or, when the policy's mode is already its session's ceiling, the line
// saying no escalation is available (sandbox.CeilingHint), or, under a
// sandbox.Unattended approver or a call that can ask no one (unattendedFor), its Remedy (sandbox.Unattended.Hint).
func (g *Guard) lines(marker string, policy *sandbox.ExecutionPolicy, detail string, writes bool) string {
	msg := marker
	if writes && policy != nil && policy.Mode == sandbox.WorkspaceWrite && policy.WorkspaceRoot == "" {
		msg += "\n" + sandbox.NoWorkspaceMarker
	}
	if detail != "" {
		msg += "\n" + detail
	}
	if policy != nil && policy.SessionGrant {
		msg += "\n" + sandbox.SessionGrantMarker(policy.Mode)
	}
	if policy != nil && atCeiling(*policy) {
		return msg + "\n" + sandbox.CeilingHint(policy.Ceiling)
	}
	if u := g.unattendedFor(policy); u != nil {
		return msg + "\n" + u.Hint(u.Remedy)
	}
	msg += "\n" + sandbox.EscalationHint(g.family.Subject())
	return msg
}

// unattendedFor is the sandbox.Unattended whose remedies replace the
// escalation hints of a call under policy: the composed approver's, else
// the call's own when it can ask no one (ExecutionPolicy.Unasked); nil when
// someone can be asked.
func (g *Guard) unattendedFor(policy *sandbox.ExecutionPolicy) *sandbox.Unattended {
	if g.unattended != nil {
		return g.unattended
	}
	if policy != nil {
		return policy.Unasked
	}
	return nil
}

// atCeiling reports whether p's session has a ceiling and p's mode is
// already it: no wider mode can be granted.
func atCeiling(p sandbox.ExecutionPolicy) bool {
	return p.Ceiling != "" && !sandboxpolicy.IsWider(p.Ceiling, p.Mode)
}

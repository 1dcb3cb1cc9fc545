package toolfs

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"

	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// Codes of tool errors that are not filesystem errors, so a program can tell
// them apart without parsing the text.
const (
	// CodeInvalidArgument marks an argument the tool refused before doing
	// anything (a missing path, a bad offset, an escalation pairing error).
	CodeInvalidArgument = "INVALID_ARGUMENT"
	// CodeEscalationRefused marks an escalation that was not granted: not
	// wider, no approver or session, rejected, cancelled or unavailable.
	CodeEscalationRefused = "SANDBOX_ESCALATION_REFUSED"
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

// standing returns the call's policy without escalation, or nil when the
// backend does not confine.
func (t *Tools) standing(sess *session.Session) *sandboxpolicy.ExecutionPolicy {
	if !t.confines {
		return nil
	}
	p := t.deps.Policy.Resolve(sess, "")
	return &p
}

// escalate resolves the policy of a mutating call of target (T-92..T-96):
// the pairing check, the standing policy, and, when the call asks for a
// wider mode, the approver's grant for exactly this call, asked with the
// target's display path. standing is the policy target was resolved under.
func (t *Tools) escalate(ctx context.Context, call tool.Call, toolName string, a args, standing *sandboxpolicy.ExecutionPolicy, target fs.Target) (*sandboxpolicy.ExecutionPolicy, error) {
	perm, just, err := t.escalationArgs(a)
	if err != nil {
		return nil, err
	}
	if perm == "" {
		return standing, nil
	}
	granted, err := sandboxpolicy.Escalate(ctx, t.deps.Approver, sandboxpolicy.ApprovalRequest{
		Session: call.Session, Tool: toolName, Mode: sandboxpolicy.Mode(perm),
		Justification: just, Target: target.DisplayPath,
	}, sandboxpolicy.SubjectOperation, standing.Mode)
	if err != nil {
		return nil, err
	}
	escalated := t.deps.Policy.Resolve(call.Session, granted)
	return &escalated, nil
}

// escalationArgs reads and checks the escalation arguments before anything
// is resolved: their pairing (X-07..X-10), and that a non-confining backend
// has nothing to escalate (T-96).
func (t *Tools) escalationArgs(a args) (perm, just string, err error) {
	if perm, err = a.optText("sandbox_permissions"); err != nil {
		return "", "", err
	}
	if just, err = a.optText("justification"); err != nil {
		return "", "", err
	}
	if !t.confines {
		if perm != "" || just != "" {
			return "", "", badArg("sandbox_permissions is not available in this composition (no sandboxing filesystem to escalate)")
		}
		return "", "", nil
	}
	if err := sandboxpolicy.CheckEscalationArgs(perm, just); err != nil {
		return "", "", badArg(err.Error())
	}
	return perm, just, nil
}

// dotDot matches a ".." segment bounded by the start, the end, "/" or "\"
// (T-14).
var dotDot = regexp.MustCompile(`(^|[/\\])\.\.([/\\]|$)`)

// cwd returns the directory a call's relative path resolves against
// (T-12..T-17): under a confining backend the policy's workspace root, else
// the session's cwd, else "" (the backend's own). With a ".." segment in the
// cwd or the path, the cwd is canonicalized first, so ".." climbs from the
// physical directory. No tool argument can choose it.
func (t *Tools) cwd(sess *session.Session, policy *sandboxpolicy.ExecutionPolicy, path string) string {
	var dir string
	switch {
	case policy != nil && policy.WorkspaceRoot != "":
		dir = policy.WorkspaceRoot
	case sess != nil:
		dir = sess.Cwd()
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	if dotDot.MatchString(dir) || dotDot.MatchString(path) {
		if resolved, err := realpath.Of(dir); err == nil {
			return resolved
		}
	}
	return dir
}

// resolve resolves a tool's path argument for a call.
func (t *Tools) resolve(ctx context.Context, sess *session.Session, policy *sandboxpolicy.ExecutionPolicy, path string) (fs.Target, error) {
	return t.deps.FS.Resolve(ctx, path, fs.ResolveOptions{Cwd: t.cwd(sess, policy, path)})
}

// mutationTarget resolves what a write or edit call needs before its
// intent: the escalation arguments are checked, the target is resolved under
// the standing policy, and then, for an escalating call, the user is asked
// about that target (the workspace root, and so the target, do not change
// with the mode). On failure it returns the rendered result.
func (t *Tools) mutationTarget(ctx context.Context, call tool.Call, toolName string, a args, path string) (*sandboxpolicy.ExecutionPolicy, fs.Target, *tool.Result) {
	fail := func(err error, p *sandboxpolicy.ExecutionPolicy) (*sandboxpolicy.ExecutionPolicy, fs.Target, *tool.Result) {
		res := t.failure(err, p)
		return nil, fs.Target{}, &res
	}
	if _, _, err := t.escalationArgs(a); err != nil {
		return fail(err, nil)
	}
	standing := t.standing(call.Session)
	target, err := t.resolve(ctx, call.Session, standing, path)
	if err != nil {
		return fail(err, standing)
	}
	if !t.confines {
		return nil, target, nil
	}
	policy, err := t.escalate(ctx, call, toolName, a, standing, target)
	if err != nil {
		return fail(err, nil)
	}
	return policy, target, nil
}

// observePresent records that a mutation left target at version; an
// observer's error fails the call although the mutation is on disk (T-83).
func (t *Tools) observePresent(call tool.Call, target fs.Target, version fs.Version, policy *sandboxpolicy.ExecutionPolicy) *tool.Result {
	if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Present, Version: version}); err != nil {
		res := t.failure(err, policy)
		return &res
	}
	return nil
}

// observe tells every observer what the call saw.
func (t *Tools) observe(sess *session.Session, target fs.Target, obs fs.Observation) error {
	var errs []error
	for _, o := range t.deps.Observers {
		errs = append(errs, o.Observe(sess, target, obs))
	}
	return errors.Join(errs...)
}

// failure renders a failed call (T-54, T-94, remedies): a sandbox denial
// becomes the marker of the call's mode and the escalation hint; a stale or
// not-observed error, or a read refused as not text, gets its remedy;
// everything else keeps its message. The FS_* code is kept.
func (t *Tools) failure(err error, policy *sandboxpolicy.ExecutionPolicy) tool.Result {
	var fe *fs.Error
	if !errors.As(err, &fe) {
		code := ""
		switch {
		case errors.Is(err, sandboxpolicy.ErrEscalationRefused):
			code = CodeEscalationRefused
		case errors.As(err, new(*argError)):
			code = CodeInvalidArgument
		}
		return tool.ErrorResult(err.Error(), code)
	}
	msg := fe.Error()
	switch fe.Code {
	case fs.CodeSandboxDenied:
		mode := fe.Mode
		if policy != nil {
			mode = policy.Mode
		}
		msg = sandboxpolicy.DenialMarker(mode) + "\n" + sandboxpolicy.EscalationHint(sandboxpolicy.SubjectOperation)
	case fs.CodeStaleVersion:
		msg += staleRemedy
	case fs.CodeNotObserved:
		msg += notObservedRemedy
	case fs.CodeNotText:
		if fe.Op == "read" {
			msg += notTextRemedy
		}
	}
	return tool.ErrorResult(msg, string(fe.Code))
}

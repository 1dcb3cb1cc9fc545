package toolfs

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// CodeInvalidArgument is the code of an argument the tool refused before
// doing anything (a missing path, a bad offset, an escalation pairing
// error). Escalation failures carry sandboxpolicy's codes; filesystem
// errors their FS_* code.
const CodeInvalidArgument = "INVALID_ARGUMENT"

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
func (t *Tools) standing(sess *session.Session) *sandbox.ExecutionPolicy {
	if !t.confines {
		return nil
	}
	p := t.deps.Policy.Resolve(sess, "")
	return &p
}

// escalation is a call's escalation request: the requested mode and the
// model's justification; the zero value asks for nothing.
type escalation struct {
	mode          sandbox.Mode
	justification string
}

// escalationArgs reads and checks the escalation arguments before anything
// is resolved: their pairing (X-07..X-10), and that a non-confining backend
// has nothing to escalate (T-96).
func (t *Tools) escalationArgs(a args) (escalation, error) {
	perm, err := a.optText("sandbox_permissions")
	if err != nil {
		return escalation{}, err
	}
	just, err := a.optText("justification")
	if err != nil {
		return escalation{}, err
	}
	if !t.confines {
		if perm != "" || just != "" {
			return escalation{}, badArg("sandbox_permissions is not available in this composition (no sandboxing filesystem to escalate)")
		}
		return escalation{}, nil
	}
	if err := sandboxpolicy.CheckEscalationArgs(perm, just); err != nil {
		return escalation{}, badArg(err.Error())
	}
	return escalation{mode: sandbox.Mode(perm), justification: just}, nil
}

// escalate resolves the policy of a mutating call of target (T-92..T-96):
// standing when the call asks for nothing, or when the standing policy
// already admits the target (no prompt: a decline can never fail a call the
// policy allowed, issue 14); else the approver's grant for exactly this
// call, asked with the canonical target, the path as given, op (what the
// call does and its size) and the boundary crossed. After a grant, path is
// resolved again: a target other than the one shown is refused
// (sandboxpolicy.CodeTargetChanged). The approver is the call's own when its
// front end set one, else the composition's.
func (t *Tools) escalate(ctx context.Context, call tool.Call, toolName, op string, paths []string, esc escalation, standing *sandbox.ExecutionPolicy, targets []fs.Target) (*sandbox.ExecutionPolicy, error) {
	if esc.mode == "" {
		return standing, nil
	}
	// A call with several targets (a move) crosses the first boundary any
	// of them crosses.
	boundary := ""
	keys := make([]string, 0, len(targets))
	shown := make([]string, 0, len(targets))
	for _, target := range targets {
		if boundary == "" {
			boundary = t.deps.Policy.Boundary(*standing, string(target.Key))
		}
		keys = append(keys, string(target.Key))
		shown = append(shown, target.DisplayPath)
	}
	if boundary == "" && sandboxpolicy.IsWider(esc.mode, standing.Mode) {
		return standing, nil
	}
	approver := call.Approver
	if approver == nil {
		approver = t.deps.Approver
	}
	granted, err := sandboxpolicy.Escalate(ctx, approver, sandboxpolicy.ApprovalRequest{
		Session: call.Session, Tool: toolName, Mode: esc.mode, Justification: esc.justification,
		Target: strings.Join(keys, " -> "), Given: strings.Join(shown, " -> "), Operation: op, Boundary: boundary,
	}, sandbox.SubjectOperation, standing.Mode)
	if err != nil {
		return nil, err
	}
	escalated := t.deps.Policy.Resolve(call.Session, granted)
	for i, path := range paths {
		fresh, err := t.resolve(ctx, call.Session, standing, path)
		if err != nil {
			return nil, err
		}
		if fresh.Key != targets[i].Key {
			return nil, sandboxpolicy.TargetChanged(granted, string(targets[i].Key), string(fresh.Key))
		}
	}
	return &escalated, nil
}

// dotDot matches a ".." segment bounded by the start, the end, "/" or "\"
// (T-14).
var dotDot = regexp.MustCompile(`(^|[/\\])\.\.([/\\]|$)`)

// cwd returns the directory a call's relative path resolves against
// (T-12..T-17): under a confining backend the policy's workspace root, else
// the session's cwd, else "" (the backend's own). With a ".." segment in the
// cwd or the path, the cwd is canonicalized first, so ".." climbs from the
// physical directory. No tool argument can choose it.
func (t *Tools) cwd(sess *session.Session, policy *sandbox.ExecutionPolicy, path string) string {
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
func (t *Tools) resolve(ctx context.Context, sess *session.Session, policy *sandbox.ExecutionPolicy, path string) (fs.Target, error) {
	return t.deps.FS.Resolve(ctx, path, fs.ResolveOptions{Cwd: t.cwd(sess, policy, path)})
}

// mutationTarget resolves what a write or edit call needs before its
// intent: the escalation arguments are read and checked once, the target is
// resolved under the standing policy, and then, for an escalating call that
// needs it, the user is asked about that target, op saying what the call
// does (the workspace root, and so the target, do not change with the
// mode). It returns the policy the mutation runs under
// (nil when the backend does not confine) and the target, or the error that
// stopped it: an argument error, a resolution *fs.Error, or a
// *sandboxpolicy.EscalationError.
func (t *Tools) mutationTarget(ctx context.Context, call tool.Call, toolName, op string, a args, path string) (*sandbox.ExecutionPolicy, fs.Target, error) {
	policy, targets, err := t.mutationTargets(ctx, call, toolName, op, a, path)
	if err != nil {
		return nil, fs.Target{}, err
	}
	return policy, targets[0], nil
}

// observe tells every observer what the call saw.
func (t *Tools) observe(sess *session.Session, target fs.Target, obs fs.Observation) error {
	var errs []error
	for _, o := range t.deps.Observers {
		errs = append(errs, o.Observe(sess.Owner(), target, obs))
	}
	return errors.Join(errs...)
}

// failure renders a failed call (T-54, T-94, remedies): a sandbox denial
// becomes the marker of the call's mode and the escalation hint; a stale or
// not-observed error, or a read refused as not text, gets its remedy;
// everything else keeps its message.
// The code is the error's own: the FS_* code of an *fs.Error, the code of a
// *sandboxpolicy.EscalationError, CodeInvalidArgument for an argument error.
// The result keeps err for the front end.
func (t *Tools) failure(err error, policy *sandbox.ExecutionPolicy) tool.Result {
	res := t.render(err, policy)
	res.Err = err
	return res
}

func (t *Tools) render(err error, policy *sandbox.ExecutionPolicy) tool.Result {
	var fe *fs.Error
	if !errors.As(err, &fe) {
		code := ""
		if ee, ok := errors.AsType[*sandboxpolicy.EscalationError](err); ok {
			code = ee.Code
		} else if errors.As(err, new(*argError)) {
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
		msg = sandbox.DenialMarker(mode)
		if policy != nil && policy.Mode == sandbox.WorkspaceWrite && policy.WorkspaceRoot == "" {
			msg += "\n" + sandbox.NoWorkspaceMarker
		}
		if policy != nil && policy.SessionGrant {
			msg += "\n" + sandbox.SessionGrantMarker(policy.Mode)
		}
		msg += "\n" + sandbox.EscalationHint(sandbox.SubjectOperation)
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

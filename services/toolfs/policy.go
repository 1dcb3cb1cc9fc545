package toolfs

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// escalate resolves the policy of a mutating call of target (T-92..T-96):
// standing when the call asks for nothing, or when the standing policy
// already admits the target (no prompt: a decline can never fail a call the
// policy allowed, issue 14); else the policy of the guard's grant for
// exactly this call, asked with the canonical target, the path as given, op
// (what the call does and its size) and the boundary crossed. After a
// grant, path is resolved again: a target other than the one shown is
// refused (sandboxpolicy.CodeTargetChanged).
func (t *Tools) escalate(ctx context.Context, call *guard.Call, op string, paths []string, esc guard.Escalation, standing *sandbox.ExecutionPolicy, targets []fs.Target) (*sandbox.ExecutionPolicy, error) {
	if esc.Mode == "" {
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
	if boundary == "" && sandboxpolicy.IsWider(esc.Mode, standing.Mode) {
		return standing, nil
	}
	escalated, err := call.Escalate(ctx, *standing, esc, sandbox.ApprovalRequest{
		Target: strings.Join(keys, " -> "), Given: strings.Join(shown, " -> "), Operation: op, Boundary: boundary,
	})
	if err != nil {
		return nil, err
	}
	for i, path := range paths {
		fresh, err := t.resolve(ctx, call.Session, standing, path)
		if err != nil {
			return nil, err
		}
		if fresh.Key != targets[i].Key {
			return nil, sandboxpolicy.TargetChanged(escalated.Mode, string(targets[i].Key), string(fresh.Key))
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

// resolve resolves a tool's path argument for a call, and adds the
// canonical target to the call's audit record.
func (t *Tools) resolve(ctx context.Context, sess *session.Session, policy *sandbox.ExecutionPolicy, path string) (fs.Target, error) {
	target, err := t.deps.FS.Resolve(ctx, path, fs.ResolveOptions{Cwd: t.cwd(sess, policy, path)})
	if err == nil {
		audit.FromContext(ctx).AddPaths(string(target.Key))
	}
	return target, err
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
func (t *Tools) mutationTarget(ctx context.Context, call *guard.Call, op, path string) (*sandbox.ExecutionPolicy, fs.Target, error) {
	policy, targets, err := t.mutationTargets(ctx, call, op, path)
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

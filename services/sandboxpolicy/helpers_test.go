package sandboxpolicy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// sandboxpolicyPkg is the package's import path: its name in the invariant
// registry.
const sandboxpolicyPkg = "github.com/dsh-go/harness/services/sandboxpolicy"

// realTempDir returns a fresh test directory spelled canonically (every
// symlink resolved), so expectations can compare it with canonical paths.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return d
}

// canonical is the realpath of an existing p.
func canonical(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return c
}

// mkdir creates dir and its parents and returns it.
func mkdir(t *testing.T, dir string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// symlink creates link pointing at target and returns link.
func symlink(t *testing.T, target, link string) string {
	t.Helper()
	require.NoError(t, os.Symlink(target, link))
	return link
}

// requireMissing fails the test unless nothing exists at p.
func requireMissing(t *testing.T, p string) {
	t.Helper()
	_, err := os.Lstat(p)
	require.ErrorIs(t, err, os.ErrNotExist, "fixture precondition: %s must not exist", p)
}

// mustNew builds the policy service for cfg and fails the test on error.
func mustNew(t *testing.T, cfg sandboxpolicy.Config) *sandboxpolicy.Service {
	t.Helper()
	svc, err := sandboxpolicy.New(cfg)
	require.NoError(t, err)
	require.NotNil(t, svc)
	return svc
}

// recorder records every approval request and answers with a fixed outcome
// and error; approver adapts it with ApproverFunc.
type recorder struct {
	outcome sandbox.Outcome
	err     error

	mu       sync.Mutex
	requests []sandbox.ApprovalRequest
	contexts []context.Context
}

func (r *recorder) approver() sandbox.Approver {
	return sandbox.ApproverFunc(func(ctx context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests = append(r.requests, req)
		r.contexts = append(r.contexts, ctx)
		return r.outcome, r.err
	})
}

// calls returns how many times the approver was asked.
func (r *recorder) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

// approveEscalation asks Escalate for requested from effective on behalf of
// sess's call of tool.
func approveEscalation(ctx context.Context, approver sandbox.Approver, sess *session.Session, tool, subject string, requested, effective sandbox.Mode, justification string) (sandbox.Mode, error) {
	return sandboxpolicy.Escalate(ctx, approver, sess, sandbox.ApprovalRequest{Tool: tool, Mode: requested, Justification: justification, Family: familyOf(subject)}, effective)
}

// escalationCode is the code of the *EscalationError in err's chain, "" when
// there is none.
func escalationCode(err error) string {
	if e, ok := errors.AsType[*sandboxpolicy.EscalationError](err); ok {
		return string(e.Code)
	}
	return ""
}

// familyOf is the family whose escalation hint has subject.
func familyOf(subject string) sandbox.Family {
	if subject == sandbox.SubjectCommand {
		return sandbox.Commands
	}
	return sandbox.FileTools
}

// stamped is p with the roots svc pins on every policy it resolves (its
// temp and extra writable roots), as the policy carries them.
func stamped(p sandbox.ExecutionPolicy, svc *sandboxpolicy.Service) sandbox.ExecutionPolicy {
	d := svc.Default()
	p.TempRoots, p.ExtraRoots = d.TempRoots, d.ExtraRoots
	return p
}

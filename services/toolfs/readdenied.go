package toolfs

import (
	"context"
	"errors"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
)

// readOperation is what an approval prompt says a credential read does.
const readOperation = "read the file"

// readDenied answers a read the deny-read set refused (denial, an *fs.Error
// with fs.CodeReadDenied) under policy (issue 24). Without escalation
// arguments it is the guard's DeniedRead, with the hint to retry under
// danger-full-access. With them, the user is asked for this one read of
// the refused file (the descriptor's real path, with the rule that denies
// it), whatever the standing mode, and, when allowed, path is resolved
// again (landing elsewhere is sandboxpolicy.CodeTargetChanged) and the read
// runs once more on the target carrying the approval
// (fs.Target.ApproveRead), which the backend lets through only while the
// opened file is that path. A later call is refused again: nothing is
// recorded.
func (t *Tools) readDenied(ctx context.Context, call *guard.Call, esc guard.Escalation, policy *sandbox.ExecutionPolicy, path string, target fs.Target, denial error, again func(approved fs.Target) tool.Result) tool.Result {
	fe, _ := errors.AsType[*fs.Error](denial)
	rd, ok := errors.AsType[*fs.ReadDenial](denial)
	if !ok || policy == nil {
		return t.g.Fail(denial, policy)
	}
	if esc.Mode == "" {
		return t.g.DeniedRead(*policy, fe.Message, "", true)
	}
	err := call.EscalateRead(ctx, *policy, esc, sandbox.ApprovalRequest{
		Target: rd.Path, Given: target.DisplayPath, Operation: readOperation, ReadRule: rd.Rule,
	})
	if err != nil {
		return t.g.Fail(err, policy)
	}
	// The path is resolved again: one that lands elsewhere now is refused
	// (and the backend checks the opened file itself too).
	fresh, err := t.resolve(ctx, call.Session, policy, path)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	if string(fresh.Key) != rd.Path {
		return t.g.Fail(sandboxpolicy.ReadTargetChanged(rd.Path, string(fresh.Key)), policy)
	}
	return again(fresh.ApproveRead(rd.Path))
}

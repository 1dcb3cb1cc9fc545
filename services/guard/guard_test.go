package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

func newGuard(t testing.TB, family sandbox.Family, confines bool) *guard.Guard {
	t.Helper()
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	g, err := guard.New(guard.Config{Family: family, Policy: pol, Confines: confines, Unconfined: "not here"})
	require.NoError(t, err)
	return g
}

func touch() tool.Tool {
	return tool.Tool{Name: "touch", InputSchema: &jsonschema.Schema{
		Type: "object", Properties: map[string]*jsonschema.Schema{"path": {Type: "string"}, "dry_run": {Type: "boolean"}},
		PropertyOrder: []string{"path", "dry_run"},
	}}
}

// TestToolIsGuardedByConstruction: the schema is closed and carries the
// escalation arguments only when the family confines; an unknown key never
// reaches the body; the body sees the session of its context.
func TestToolIsGuardedByConstruction(t *testing.T) {
	var ran []*guard.Call
	body := func(_ context.Context, c *guard.Call) tool.Result {
		ran = append(ran, c)
		return tool.Result{Text: "ran"}
	}
	confined := newGuard(t, sandbox.FileTools, true).Tool(touch(), true, body)
	open := newGuard(t, sandbox.Commands, false).Tool(touch(), true, body)
	readOnly := newGuard(t, sandbox.FileTools, true).Tool(touch(), false, body)

	assert.Equal(t, &jsonschema.Schema{Not: &jsonschema.Schema{}}, confined.InputSchema.AdditionalProperties)
	assert.Equal(t, []string{"path", "dry_run", "sandbox_permissions", "justification"}, confined.InputSchema.PropertyOrder)
	assert.Contains(t, confined.InputSchema.Properties["sandbox_permissions"].Description, "exactly this operation once")
	assert.NotContains(t, open.InputSchema.Properties, "sandbox_permissions")
	assert.NotContains(t, readOnly.InputSchema.Properties, "sandbox_permissions")
	assert.NotContains(t, touch().InputSchema.Properties, "sandbox_permissions", "the family's schema is not changed in place")

	sess := session.New("s", "/srv/ws")
	ctx := session.NewContext(context.Background(), sess)
	for _, tc := range []struct {
		tl   *tool.Tool
		args string
		want string
	}{
		{confined, `{"path":"a","dryRun":true}`, `Error: unknown argument "dryRun" (did you mean "dry_run"?); nothing was done; this tool takes: path, dry_run, sandbox_permissions, justification`},
		{confined, `{"path":"a","pth":"b","zzz":1}`, `Error: unknown argument "pth" (did you mean "path"?); unknown argument "zzz"; nothing was done; this tool takes: path, dry_run, sandbox_permissions, justification`},
		{confined, `[1]`, `Error: tool arguments must be a JSON object`},
		{open, `{"path":"a","sandbox_permissions":"danger-full-access","justification":"j"}`, `Error: sandbox_permissions is not available in this composition (not here)`},
		{readOnly, `{"path":"a","sandbox_permissions":"danger-full-access"}`, `Error: unknown argument "sandbox_permissions"; nothing was done; this tool takes: path, dry_run`},
	} {
		res := tc.tl.Handler(ctx, tool.Call{Arguments: json.RawMessage(tc.args)})
		assert.Equal(t, tool.Result{Text: tc.want, IsError: true, Code: errcode.InvalidArgument, Err: res.Err}, res, tc.args)
	}
	assert.Empty(t, ran, "no refused call reached the body")

	res := confined.Handler(ctx, tool.Call{Arguments: json.RawMessage(`{"path":"a","sandbox_permissions":"danger-full-access","justification":"j"}`)})
	assert.Equal(t, "ran", res.Text)
	require.Len(t, ran, 1)
	assert.Same(t, sess, ran[0].Session)
	esc, err := ran[0].Escalation()
	require.NoError(t, err)
	assert.Equal(t, guard.Escalation{Mode: sandbox.DangerFullAccess, Justification: "j"}, esc)
	assert.Equal(t, sandbox.WorkspaceWrite, ran[0].Standing().Mode)
	assert.Equal(t, "/srv/ws", ran[0].Workspace())

	res = confined.Handler(context.Background(), tool.Call{Arguments: json.RawMessage(`null`)})
	assert.Equal(t, "ran", res.Text)
	assert.Nil(t, ran[1].Session, "no session in the context: a call with none")
}

// TestFailRendersEveryFamilyAlike: each error kind keeps its code; a sandbox
// denial carries the marker and the family's hint.
func TestFailRendersEveryFamilyAlike(t *testing.T) {
	files, cmds := newGuard(t, sandbox.FileTools, true), newGuard(t, sandbox.Commands, true)
	ww := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws"}
	denied := &fs.Error{Code: fs.CodeSandboxDenied, Op: "write", Path: "/x", Message: "denied"}
	res := files.Fail(denied, &ww)
	assert.Equal(t, fs.CodeSandboxDenied, res.Code)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.WorkspaceWrite)+"\n"+sandbox.EscalationHint(sandbox.SubjectOperation), res.Text)
	assert.Same(t, denied, res.Err)

	res = cmds.Denied(ww, "(inferred: ...)", "exit code 1")
	assert.Equal(t, fs.CodeSandboxDenied, res.Code)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.WorkspaceWrite)+"\n(inferred: ...)\n"+sandbox.EscalationHint(sandbox.SubjectCommand)+"\nexit code 1", res.Text)

	res = cmds.DeniedNetwork(ww, "(inferred: ...)", "exit code 7")
	assert.Equal(t, guard.CodeNetworkDenied, res.Code)
	assert.Equal(t, "Error: [sandbox: network access denied under workspace-write mode]\n(inferred: ...)\n"+sandbox.EscalationHint(sandbox.SubjectCommand)+"\nexit code 7", res.Text)
	granted := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, SessionGrant: true}
	res = cmds.DeniedNetwork(granted, "(inferred: ...)", "")
	assert.Equal(t, "Error: [sandbox: network access denied under workspace-write mode]\n(inferred: ...)\n"+
		sandbox.SessionGrantMarker(sandbox.WorkspaceWrite)+"\n"+sandbox.EscalationHint(sandbox.SubjectCommand), res.Text)

	assert.Equal(t, exec.CodeUnavailable, files.Fail(&exec.Error{Code: exec.CodeUnavailable, Message: "m"}, nil).Code)
	assert.Equal(t, sandboxpolicy.CodeTargetChanged, files.Fail(sandboxpolicy.TargetChanged(sandbox.DangerFullAccess, "/a", "/b"), nil).Code)
	assert.Equal(t, errcode.InvalidArgument, files.Fail(guard.BadArg("bad"), nil).Code)
	assert.Equal(t, errcode.Code(""), files.Fail(errors.New("plain"), nil).Code)
	assert.Equal(t, "Error: cannot write \"/x\": stale — re-read the file, then retry",
		files.Fail(&fs.Error{Code: fs.CodeStaleVersion, Op: "write", Path: "/x", Message: `cannot write "/x": stale`}, nil).Text)
}

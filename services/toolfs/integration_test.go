//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/readbeforewrite"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// TestAgentSession composes the real graph (fssandbox + sandboxpolicy +
// readbeforewrite + toolfs) with fxtest and plays an agent's session: read,
// edit, an external change, a stale edit with its remedy, a re-read and
// retry, a denied outside write, an escalation granted (the write lands) and
// one rejected (nothing changes).
func TestAgentSession(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	fixture.Build(t, base, "ws/notes.txt: hello world\n", "outside/")

	answers := []sandbox.Outcome{sandbox.AllowedOnce, sandbox.Rejected}
	var asked []sandbox.ApprovalRequest
	approver := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		asked = append(asked, req)
		out := answers[0]
		answers = answers[1:]
		return out, nil
	})

	var group tool.Group
	app := fxtest.New(t,
		fx.Supply(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}}),
		fx.Supply(fslocal.Config{Cwd: ws}),
		fx.Provide(func() sandbox.Approver { return approver }),
		sandboxpolicy.Module,
		fssandbox.Module,
		readbeforewrite.Module,
		toolfs.Module,
		fx.Populate(&group),
	)
	app.RequireStart()
	defer app.RequireStop()

	tools := map[string]*tool.Tool{}
	for _, tl := range tool.Sorted(group.Tools) {
		tools[tl.Name] = tl
	}
	require.Len(t, tools, 9)
	sess := session.New("agent-1", ws)
	call := func(name, args string) tool.Result {
		t.Helper()
		return tools[name].Handler(session.NewContext(context.Background(), sess), tool.Call{ID: name, Arguments: json.RawMessage(args)})
	}
	notes := filepath.Join(ws, "notes.txt")
	disk := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b)
	}

	r := call("read", `{"file_path":"notes.txt"}`)
	require.False(t, r.IsError, r.Text)
	assert.Contains(t, r.Text, "1: hello world")

	r = call("edit", `{"file_path":"notes.txt","old_string":"world","new_string":"brave world"}`)
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "hello brave world\n", disk(notes))

	require.NoError(t, os.WriteFile(notes, []byte("hello brave new world\n"), 0o644), "an external change")
	r = call("edit", `{"file_path":"notes.txt","old_string":"brave","new_string":"bold"}`)
	require.True(t, r.IsError)
	assert.EqualValues(t, "FS_STALE_VERSION", r.Code)
	assert.Equal(t, `Error: cannot edit "`+notes+`": file changed since it was read — re-read the file, then retry`, r.Text)
	assert.Equal(t, "hello brave new world\n", disk(notes), "the stale edit changed nothing")

	r = call("read", `{"file_path":"notes.txt"}`)
	require.False(t, r.IsError, r.Text)
	r = call("edit", `{"file_path":"notes.txt","old_string":"brave","new_string":"bold"}`)
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "hello bold new world\n", disk(notes), "the retry after a re-read lands")

	escaped := filepath.Join(outside, "escaped.txt")
	r = call("write", `{"file_path":"`+escaped+`","content":"x"}`)
	require.True(t, r.IsError)
	assert.EqualValues(t, "FS_SANDBOX_DENIED", r.Code)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.WorkspaceWrite)+"\n"+
		sandbox.EscalationHint(sandbox.SubjectOperation), r.Text)
	assert.NoFileExists(t, escaped)
	assert.Empty(t, asked, "a plain call never asks")

	r = call("write", `{"file_path":"`+escaped+`","content":"granted","sandbox_permissions":"danger-full-access","justification":"The user asked for this file."}`)
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "granted", disk(escaped), "the granted escalation lands")
	require.Len(t, asked, 1)
	assert.Equal(t, "escalate sandbox to danger-full-access: The user asked for this file.", asked[0].Reason)
	assert.Equal(t, "write", asked[0].Tool)

	rejected := filepath.Join(outside, "rejected.txt")
	r = call("write", `{"file_path":"`+rejected+`","content":"no","sandbox_permissions":"danger-full-access","justification":"Again."}`)
	require.True(t, r.IsError)
	assert.Equal(t, `Error: the user rejected escalating this operation to "danger-full-access"`, r.Text)
	assert.NoFileExists(t, rejected, "the rejected escalation changes nothing")

	r = call("write", `{"file_path":"`+filepath.Join(outside, "again.txt")+`","content":"x"}`)
	assert.EqualValues(t, "FS_SANDBOX_DENIED", r.Code, "a grant covers exactly one call")
	assert.Empty(t, fixture.Residue(t, base))
}

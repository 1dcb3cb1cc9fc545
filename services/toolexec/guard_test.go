package toolexec_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
	"github.com/dsh-go/harness/services/toolfs"
)

// families is the file tools and exec over one policy, with no composed
// approver: every prompt goes to the call's own approver, as under
// `harness serve`.
type families struct {
	*world
	exec  *tool.Tool
	write *tool.Tool
}

func newFamilies(t *testing.T, mode sandbox.Mode) *families {
	t.Helper()
	w := newWorld(t, mode)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, w.pol)
	require.NoError(t, err)
	et, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	fsys, err := fssandbox.New(w.pol, fslocal.Config{Cwd: w.ws}, fssandbox.Config{}, zap.NewNop())
	require.NoError(t, err)
	ft, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: fsys, Policy: w.pol})
	require.NoError(t, err)
	return &families{world: w, exec: et.Exec(), write: ft.Write()}
}

// answering returns the approver of one call: it records the request and
// answers out.
func (w *world) answering(out sandbox.Outcome) sandbox.Approver {
	return sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		w.asked = append(w.asked, req)
		return out, nil
	})
}

func callWith(t *testing.T, tl *tool.Tool, sess *session.Session, approver sandbox.Approver, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Handler(session.NewContext(context.Background(), sess), tool.Call{ID: "c", Arguments: raw, Approver: approver})
}

// TestExecEscalationReachesTheCallsApprover (issue 21): with no composed
// approver (harness serve), an exec escalation asks the call's own approver
// (the client's elicitation) and lands only what was approved.
func TestExecEscalationReachesTheCallsApprover(t *testing.T) {
	requireLandlock(t)
	for _, tc := range []struct {
		answer sandbox.Outcome
		lands  bool
		code   errcode.Code
	}{
		{sandbox.AllowedOnce, true, ""},
		{sandbox.AllowedForSession, true, ""},
		{sandbox.Rejected, false, sandboxpolicy.CodeEscalationRefused},
		{sandbox.Cancelled, false, sandboxpolicy.CodeEscalationRefused},
		{sandbox.Unavailable, false, sandboxpolicy.CodeEscalationRefused},
	} {
		t.Run(string(tc.answer), func(t *testing.T) {
			f := newFamilies(t, sandbox.WorkspaceWrite)
			target := filepath.Join(f.outside, "granted.txt")
			res := callWith(t, f.exec, f.sess, f.answering(tc.answer), map[string]any{
				"command": "printf granted > " + target, "sandbox_permissions": "danger-full-access", "justification": "the user asked",
			})
			require.Len(t, f.asked, 1, "the call's approver is asked")
			assert.Equal(t, sandbox.Commands, f.asked[0].Family)
			assert.Equal(t, "exec", f.asked[0].Tool)
			assert.Equal(t, "printf granted > "+target, f.asked[0].Command)
			assert.EqualValues(t, tc.code, res.Code, res.Text)
			if tc.lands {
				assert.False(t, res.IsError, res.Text)
				got, err := os.ReadFile(target)
				require.NoError(t, err)
				assert.Equal(t, "granted", string(got))
				return
			}
			assert.True(t, res.IsError)
			assert.NoFileExists(t, target)
		})
	}
}

// TestAGrantCoversItsFamilyOnly (issue 21): "allow for the session" to a
// write prompt leaves later commands confined (no prompt, the write outside
// refused, nothing on disk), and a command's session grant leaves later
// file writes confined.
func TestAGrantCoversItsFamilyOnly(t *testing.T) {
	requireLandlock(t)
	t.Run("a file grant does not widen commands", func(t *testing.T) {
		f := newFamilies(t, sandbox.WorkspaceWrite)
		byWrite := filepath.Join(f.outside, "by-write.txt")
		res := callWith(t, f.write, f.sess, f.answering(sandbox.AllowedForSession), map[string]any{
			"file_path": byWrite, "content": "w", "sandbox_permissions": "danger-full-access", "justification": "j",
		})
		require.False(t, res.IsError, res.Text)
		require.FileExists(t, byWrite)
		byCmd := filepath.Join(f.outside, "by-command.txt")
		res = callWith(t, f.exec, f.sess, f.answering(sandbox.AllowedOnce), map[string]any{"command": "printf c > " + byCmd})
		assert.True(t, res.IsError, res.Text)
		assert.EqualValues(t, fs.CodeSandboxDenied, res.Code, res.Text)
		assert.NoFileExists(t, byCmd)
		assert.Len(t, f.asked, 1, "the command was not asked about: it ran under the deployment's mode")
		res = callWith(t, f.write, f.sess, nil, map[string]any{"file_path": filepath.Join(f.outside, "again.txt"), "content": "w"})
		assert.False(t, res.IsError, "later file calls run under the grant: %s", res.Text)
	})
	t.Run("a command grant does not widen the file tools", func(t *testing.T) {
		f := newFamilies(t, sandbox.WorkspaceWrite)
		byCmd := filepath.Join(f.outside, "by-command.txt")
		res := callWith(t, f.exec, f.sess, f.answering(sandbox.AllowedForSession), map[string]any{
			"command": "printf c > " + byCmd, "sandbox_permissions": "danger-full-access", "justification": "j",
		})
		require.False(t, res.IsError, res.Text)
		require.FileExists(t, byCmd)
		byWrite := filepath.Join(f.outside, "by-write.txt")
		res = callWith(t, f.write, f.sess, nil, map[string]any{"file_path": byWrite, "content": "w"})
		assert.EqualValues(t, fs.CodeSandboxDenied, res.Code, res.Text)
		assert.NoFileExists(t, byWrite)
		again := filepath.Join(f.outside, "again.txt")
		res = callWith(t, f.exec, f.sess, nil, map[string]any{"command": "printf c > " + again})
		assert.False(t, res.IsError, "later commands run under the grant: %s", res.Text)
		assert.FileExists(t, again)
	})
}

// TestExecRefusesUnknownArguments (issue 21): a key the schema does not
// declare is INVALID_ARGUMENT naming it, and nothing runs.
func TestExecRefusesUnknownArguments(t *testing.T) {
	requireLandlock(t)
	f := newFamilies(t, sandbox.WorkspaceWrite)
	require.NoError(t, os.Mkdir(filepath.Join(f.ws, "build"), 0o755))
	for _, args := range []map[string]any{
		{"command": "touch ran", "cwd": "build"},
		{"command": "touch ran", "timeout": 5},
		{"command": "touch ran", "workDir": "build"},
	} {
		res := callWith(t, f.exec, f.sess, nil, args)
		assert.EqualValues(t, errcode.InvalidArgument, res.Code, res.Text)
		assert.Contains(t, res.Text, "unknown argument")
		assert.NoFileExists(t, filepath.Join(f.ws, "ran"))
		assert.NoFileExists(t, filepath.Join(f.ws, "build", "ran"))
	}
	res := callWith(t, f.exec, f.sess, nil, map[string]any{"command": "true", "workDir": "build"})
	assert.Contains(t, res.Text, `unknown argument "workDir" (did you mean "workdir"?)`)
	assert.Empty(t, f.asked)
}

// TestExecSchemaDeclaresItsBounds (issue 21): timeout_ms is declared as the
// integer from 1 to 600000 the tool enforces, and the schema is closed.
func TestExecSchemaDeclaresItsBounds(t *testing.T) {
	requireLandlock(t)
	f := newFamilies(t, sandbox.WorkspaceWrite)
	s := f.exec.InputSchema
	tm := s.Properties["timeout_ms"]
	require.NotNil(t, tm)
	assert.Equal(t, "integer", tm.Type)
	assert.Equal(t, 1.0, *tm.Minimum)
	assert.Equal(t, 600000.0, *tm.Maximum)
	assert.Equal(t, &jsonschema.Schema{Not: &jsonschema.Schema{}}, s.AdditionalProperties)
	for _, bad := range []any{0, 600001, 1.5, "10"} {
		res := callWith(t, f.exec, f.sess, nil, map[string]any{"command": "touch ran", "timeout_ms": bad})
		assert.EqualValues(t, errcode.InvalidArgument, res.Code, "%v: %s", bad, res.Text)
	}
	assert.NoFileExists(t, filepath.Join(f.ws, "ran"))
}

// TestExecModeHeldIsAllowed (issue 36): after the user allowed a mode for
// the session, the same call with sandbox_permissions (the retry the
// denial hint asks for) runs under it without asking again; asking for the
// deployment's own mode is allowed too, and lifts no deny-read path.
func TestExecModeHeldIsAllowed(t *testing.T) {
	requireLandlock(t)
	t.Run("a session grant", func(t *testing.T) {
		f := newFamilies(t, sandbox.WorkspaceWrite)
		first, second := filepath.Join(f.outside, "first.txt"), filepath.Join(f.outside, "second.txt")
		esc := map[string]any{"sandbox_permissions": "danger-full-access", "justification": "the user asked"}
		args := func(target string) map[string]any {
			a := map[string]any{"command": "printf granted > " + target}
			for k, v := range esc {
				a[k] = v
			}
			return a
		}
		res := callWith(t, f.exec, f.sess, f.answering(sandbox.AllowedForSession), args(first))
		require.False(t, res.IsError, res.Text)
		res = callWith(t, f.exec, f.sess, f.answering(sandbox.Rejected), args(second))
		require.False(t, res.IsError, res.Text)
		assert.Len(t, f.asked, 1, "the mode held is not asked for again")
		for _, p := range []string{first, second} {
			got, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, "granted", string(got))
		}
	})
	t.Run("the deployment's mode", func(t *testing.T) {
		f := newFamilies(t, sandbox.WorkspaceWrite)
		target := filepath.Join(f.ws, "made.txt")
		res := callWith(t, f.exec, f.sess, f.answering(sandbox.Rejected), map[string]any{
			"command": "printf x > " + target, "sandbox_permissions": "workspace-write", "justification": "the user asked",
		})
		require.False(t, res.IsError, res.Text)
		assert.Empty(t, f.asked)
		got, err := os.ReadFile(target)
		require.NoError(t, err)
		assert.Equal(t, "x", string(got))
		outside := filepath.Join(f.outside, "x.txt")
		res = callWith(t, f.exec, f.sess, f.answering(sandbox.AllowedOnce), map[string]any{
			"command": "printf x > " + outside, "sandbox_permissions": "workspace-write", "justification": "the user asked",
		})
		assert.EqualValues(t, fs.CodeSandboxDenied, res.Code, res.Text)
		assert.NoFileExists(t, outside)
		assert.Empty(t, f.asked)
	})
}

package toolexec_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestCeilingHoldsCommands (issue 26): a command of a session whose
// ceiling is workspace-write runs confined even on a danger-full-access
// deployment (the real sandbox refuses the write outside, and the denial
// offers no escalation), an escalation to danger-full-access is refused
// without asking the approver, and nothing lands outside; the workspace
// stays writable.
func TestCeilingHoldsCommands(t *testing.T) {
	requireLandlock(t)
	never := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		t.Errorf("the approver was asked for %s beyond the session's ceiling", req.Mode)
		return sandbox.AllowedOnce, nil
	})
	cases := []struct {
		name    string
		server  sandbox.Mode
		outside bool
		esc     bool
		code    string
	}{
		{name: "a danger-full-access deployment is clamped: a write outside is denied", server: sandbox.DangerFullAccess, outside: true, code: string(fs.CodeSandboxDenied)},
		{name: "an escalation to danger-full-access is refused without asking", server: sandbox.WorkspaceWrite, outside: true, esc: true, code: string(sandboxpolicy.CodeEscalationRefused)},
		{name: "the workspace stays writable", server: sandbox.DangerFullAccess},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFamilies(t, tc.server)
			require.NoError(t, sandboxpolicy.SetCeiling(f.sess, sandbox.WorkspaceWrite))
			dir := f.ws
			if tc.outside {
				dir = f.outside
			}
			target := filepath.Join(dir, "landed.txt")
			args := map[string]any{"command": "printf landed > " + target}
			if tc.esc {
				args["sandbox_permissions"], args["justification"] = "danger-full-access", "the user asked"
			}
			res := callWith(t, f.exec, f.sess, never, args)
			if tc.code == "" {
				require.False(t, res.IsError, res.Text)
				got, err := os.ReadFile(target)
				require.NoError(t, err)
				assert.Equal(t, "landed", string(got))
				return
			}
			assert.True(t, res.IsError, res.Text)
			assert.EqualValues(t, tc.code, res.Code, res.Text)
			assert.NoFileExists(t, target, "nothing lands outside")
			if tc.esc {
				assert.Equal(t, `Error: sandbox escalation to "danger-full-access" is refused without asking: the principal's widest mode is "workspace-write"`, res.Text)
			} else {
				assert.Contains(t, res.Text, sandbox.DenialMarker(sandbox.WorkspaceWrite))
				assert.Contains(t, res.Text, sandbox.CeilingHint(sandbox.WorkspaceWrite))
				assert.NotContains(t, res.Text, sandbox.EscalationHint(sandbox.SubjectCommand))
			}
		})
	}
}

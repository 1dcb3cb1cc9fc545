package toolexec_test

// Attack round on issue 21. Each case failed before its fix.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolexec"
)

// TestAttack21CommandCannotMoveTheWorkspaceAway: under workspace-write, a
// temp area that holds the workspace (a workspace under /tmp with the
// default temp roots) lets a confined command rename the workspace's parent
// (only the root itself is a mount point), so the workspace root leaves its
// path and every later command of the session fails (workdir is not an
// existing directory). The file tools refuse to move a writable root
// itself; the runner lets its ancestor go. It failed before its fix.
func TestAttack21CommandCannotMoveTheWorkspaceAway(t *testing.T) {
	requireLandlock(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws := filepath.Join(base, "proj", "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "keep"), []byte("k"), 0o644))
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{base}})
	require.NoError(t, err)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	et, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: pol})
	require.NoError(t, err)
	sess := session.New("s", ws)
	res := call(t, et.Exec(), sess, map[string]any{"command": "mv " + filepath.Join(base, "proj") + " " + filepath.Join(base, "gone")})
	t.Log(res.Text)
	assert.FileExists(t, filepath.Join(ws, "keep"), "a confined command moved the workspace root away")
}

// TestAttack21ApprovedCommandRunsWhereThePromptSaid: the prompt of an exec
// escalation names the canonical workdir, but the command then starts in
// that path as a string: nothing checks after the approval that it still
// is the directory shown (the file tools refuse with
// SANDBOX_TARGET_CHANGED). While the user reads the prompt, another call of
// the same connection (calls run concurrently; a command under the standing
// workspace-write may make symlinks) swaps the workdir for a symlink to a
// directory outside the workspace, and the approved danger-full-access
// command ("rm -rf ./*" in "<ws>/sub", as shown) runs there. Reproduced
// end to end over `harness serve`. Here the approver does the swap, as the
// concurrent call did. It failed before its fix.
func TestAttack21ApprovedCommandRunsWhereThePromptSaid(t *testing.T) {
	requireLandlock(t)
	w := newWorld(t, sandbox.WorkspaceWrite)
	sub := filepath.Join(w.ws, "sub")
	victim := filepath.Join(w.outside, "victim")
	require.NoError(t, os.Mkdir(victim, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(victim, "data"), []byte("precious"), 0o644))
	var shown string
	swap := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		shown = req.Workdir
		require.NoError(t, os.Rename(sub, sub+"_old"))
		require.NoError(t, os.Symlink(victim, sub))
		return sandbox.AllowedOnce, nil
	})
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, w.pol)
	require.NoError(t, err)
	et, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: w.pol, Approver: swap})
	require.NoError(t, err)
	res := call(t, et.Exec(), w.sess, map[string]any{
		"command": "rm -rf ./*", "workdir": "sub",
		"sandbox_permissions": "danger-full-access", "justification": "Empty the sub directory.",
	})
	t.Log(res.Text)
	assert.Equal(t, sub, shown, "the prompt showed the workdir")
	assert.FileExists(t, filepath.Join(victim, "data"), "the approved command ran outside the workspace, not in the workdir the prompt showed")
}

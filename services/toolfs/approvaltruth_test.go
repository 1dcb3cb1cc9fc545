//go:build linux

package toolfs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestApprovalNamesTheLandingTarget (issue 12, "The approval shows the
// truth"): ws/notes.md is a symlink to a file outside; a denied write
// retried with sandbox_permissions shows the outside canonical path and the
// path as given; if the link is swapped after the prompt, the call is
// refused and nothing is written anywhere.
func TestApprovalNamesTheLandingTarget(t *testing.T) {
	tests := []struct {
		name string
		swap bool
	}{
		{name: "approved and unchanged: the shown outside file is written"},
		{name: "the link swapped after the prompt: refused, nothing written", swap: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := wrBase(t)
			ws, outside := wrMkdir(t, filepath.Join(base, "ws")), wrMkdir(t, filepath.Join(base, "outside"))
			secret := wrPut(t, filepath.Join(outside, "secret.md"), "secret\n")
			other := wrPut(t, filepath.Join(outside, "other.md"), "other\n")
			link := filepath.Join(ws, "notes.md")
			require.NoError(t, os.Symlink(secret, link))
			var asked []sandbox.ApprovalRequest
			approver := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
				asked = append(asked, req)
				if tc.swap {
					require.NoError(t, os.Remove(link))
					require.NoError(t, os.Symlink(other, link))
				}
				return sandbox.AllowedOnce, nil
			})
			e := wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(sandbox.WorkspaceWrite, ws), Bare: true, Approver: approver})
			sess := session.New("s", ws)

			res := e.write(sess, map[string]any{"file_path": "notes.md", "content": "pwned"})
			wrFail(t, res, fs.CodeSandboxDenied, wrDenial(sandbox.WorkspaceWrite))

			res = e.write(sess, map[string]any{"file_path": "notes.md", "content": "pwned", "sandbox_permissions": "danger-full-access", "justification": "update notes"})
			require.Len(t, asked, 1)
			req := asked[0]
			assert.Equal(t, secret, req.Target, "the prompt names where the write lands")
			assert.Equal(t, link, req.Given, "and the path as given")
			assert.Equal(t, "write 5 bytes (the whole file)", req.Operation)
			assert.Equal(t, sandboxpolicy.BoundaryOutside, req.Boundary)
			assert.Contains(t, sandboxpolicy.Prompt(req), `on "`+secret+`" (given as "`+link+`")`)
			if tc.swap {
				require.True(t, res.IsError)
				assert.EqualValues(t, sandboxpolicy.CodeTargetChanged, res.Code)
				assert.Contains(t, res.Text, "its target changed after the approval")
				assert.Equal(t, "secret\n", wrDisk(t, secret))
				assert.Equal(t, "other\n", wrDisk(t, other), "the new link target is not written")
				return
			}
			wrOK(t, res)
			assert.Equal(t, "pwned", wrDisk(t, secret))
		})
	}
}

// TestEscalationNotNeededAsksNobody (issue 14, item 6): an escalation the
// standing policy does not need runs without a prompt, so a decline cannot
// fail a write the policy allowed.
func TestEscalationNotNeededAsksNobody(t *testing.T) {
	base := wrBase(t)
	ws := wrMkdir(t, filepath.Join(base, "ws"))
	approvals := &wrApprovals{outcome: sandbox.Rejected}
	e := wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(sandbox.WorkspaceWrite, ws), Bare: true, Approver: approvals.approver()})
	sess := session.New("s", ws)
	res := e.write(sess, map[string]any{"file_path": "in.txt", "content": "x", "sandbox_permissions": "danger-full-access", "justification": "just in case"})
	wrOK(t, res)
	assert.Empty(t, approvals.asked(), "nobody is asked")
	assert.Equal(t, "x", wrDisk(t, filepath.Join(ws, "in.txt")))
	require.Len(t, e.fs.writeCalls(), 1)
	assert.Equal(t, sandbox.WorkspaceWrite, e.fs.writeCalls()[0].Policy.Mode, "it runs under the standing mode, not the requested one")

	res = e.write(sess, map[string]any{"file_path": filepath.Join(base, "out.txt"), "content": "x", "sandbox_permissions": "danger-full-access", "justification": "needed"})
	require.True(t, res.IsError)
	assert.Len(t, approvals.asked(), 1, "a call the standing policy denies still asks")
	assert.NoFileExists(t, filepath.Join(base, "out.txt"))
}

// TestAllowForSessionWidensLaterCalls: allow-for-session lands the call and
// the later calls of the session without asking; a later denial says the
// session runs under the granted mode.
func TestAllowForSessionWidensLaterCalls(t *testing.T) {
	base := wrBase(t)
	ws := wrMkdir(t, filepath.Join(base, "ws"))
	approvals := &wrApprovals{outcome: sandbox.AllowedForSession}
	e := wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(sandbox.ReadOnly, ws), Bare: true, Approver: approvals.approver()})
	sess := session.New("s", ws)
	wrOK(t, e.write(sess, map[string]any{"file_path": "a.txt", "content": "a", "sandbox_permissions": "workspace-write", "justification": "notes"}))
	wrOK(t, e.write(sess, map[string]any{"file_path": "b.txt", "content": "b"}))
	assert.Len(t, approvals.asked(), 1)
	assert.Equal(t, "a", wrDisk(t, filepath.Join(ws, "a.txt")))
	assert.Equal(t, "b", wrDisk(t, filepath.Join(ws, "b.txt")))

	res := e.write(sess, map[string]any{"file_path": filepath.Join(base, "out.txt"), "content": "x"})
	require.True(t, res.IsError)
	assert.Contains(t, res.Text, sandbox.SessionGrantMarker(sandbox.WorkspaceWrite))
	assert.NoFileExists(t, filepath.Join(base, "out.txt"))

	res = e.write(session.New("other", ws), map[string]any{"file_path": "c.txt", "content": "c"})
	wrFail(t, res, fs.CodeSandboxDenied, wrDenial(sandbox.ReadOnly))
	assert.NoFileExists(t, filepath.Join(ws, "c.txt"))
}

// TestNoWorkspaceIsSet (issue 12): a session whose cwd is / under
// workspace-write has no workspace: cd / && harness call write /opt/x is
// denied with a message saying so, and /opt/x is not created.
func TestNoWorkspaceIsSet(t *testing.T) {
	t.Chdir("/")
	target := "/opt/harness-no-workspace-" + strings.ReplaceAll(t.Name(), "/", "_")
	_, err := os.Lstat(target)
	require.ErrorIs(t, err, os.ErrNotExist)
	e := wrNew(t, wrSetup{Cwd: "/", Sandbox: &sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, TempRoots: []string{}}, Bare: true})
	res := e.write(session.New("s", "/"), map[string]any{"file_path": target, "content": "x"})
	require.True(t, res.IsError)
	assert.EqualValues(t, fs.CodeSandboxDenied, res.Code)
	assert.Contains(t, res.Text, sandbox.NoWorkspaceMarker)
	_, err = os.Lstat(target)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was created")
}

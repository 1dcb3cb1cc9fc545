package guard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestDeniedRead: a refused read renders the read marker of the call's
// mode, the refusal, the line saying a session grant does not lift the
// set, and the hint to ask for that one read (only a read's refusal
// escalates); FS_READ_DENIED is kept.
func TestDeniedRead(t *testing.T) {
	files, cmds := newGuard(t, sandbox.FileTools, true), newGuard(t, sandbox.Commands, true)
	readHint := "[sandbox: escalation available — retry this exact operation once with sandbox_permissions=danger-full-access + justification; the approval prompt asks the user for this one credential read]"
	noHint := "[sandbox: a path in the deny-read set is not listed, searched or changed by a file tool; only a read of one file can be approved: read it with sandbox_permissions=danger-full-access + justification]"
	refusal := func(op string) *fs.Error {
		return &fs.Error{
			Code: fs.CodeReadDenied, Op: op, Path: "/k", Mode: sandbox.ReadOnly,
			Message: `cannot ` + op + ` "/k": /k is in the deny-read set (~/.ssh (default))`,
		}
	}
	ww := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite}
	granted := sandbox.ExecutionPolicy{Mode: sandbox.DangerFullAccess, SessionGrant: true}
	cases := []struct {
		name   string
		err    *fs.Error
		policy *sandbox.ExecutionPolicy
		want   string
	}{
		{
			"a read under the call's mode escalates", refusal("read"), &ww,
			"Error: [sandbox: read access denied under workspace-write mode]\n" + refusal("read").Message + "\n" + readHint,
		},
		{
			"without a policy the error's mode is shown", refusal("read"), nil,
			"Error: [sandbox: read access denied under read-only mode]\n" + refusal("read").Message + "\n" + readHint,
		},
		{
			"a session grant is said not to lift the set", refusal("read"), &granted,
			"Error: [sandbox: read access denied under danger-full-access mode]\n" + refusal("read").Message + "\n" +
				"[sandbox: this session runs under danger-full-access, which the user allowed for the session; that grant does not lift the deny-read set]\n" + readHint,
		},
		{
			"a listing cannot be approved", refusal("list"), &ww,
			"Error: [sandbox: read access denied under workspace-write mode]\n" + refusal("list").Message + "\n" + noHint,
		},
		{
			"a search cannot be approved", refusal("grep"), &ww,
			"Error: [sandbox: read access denied under workspace-write mode]\n" + refusal("grep").Message + "\n" + noHint,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := files.Fail(c.err, c.policy)
			assert.True(t, res.IsError)
			assert.Equal(t, fs.CodeReadDenied, res.Code)
			assert.Equal(t, c.want, res.Text)
			assert.Same(t, c.err, res.Err)
		})
	}
	res := cmds.DeniedRead(ww, "cat: /k: Permission denied", "exit code 1", true)
	assert.Equal(t, fs.CodeReadDenied, res.Code)
	assert.Equal(t, "Error: [sandbox: read access denied under workspace-write mode]\ncat: /k: Permission denied\n"+
		"[sandbox: escalation available — retry this exact command once with sandbox_permissions=danger-full-access + justification; the approval prompt asks the user for this one credential read]\nexit code 1", res.Text)
}

//go:build linux

package toolfs_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestEscalationProtectedPath: a write into .git inside the workspace is
// denied under workspace-write, and its escalation asks the approver (the
// standing policy does not admit it: deliberate difference 11), naming the
// protected path as the boundary; approved, the write lands.
func TestEscalationProtectedPath(t *testing.T) {
	w := wrNewWorld(t)
	fixture.Build(t, w.ws, ".git/config: [core]\n")
	approvals := &wrApprovals{outcome: sandbox.AllowedOnce}
	e := w.sandboxed(t, wrWW, approvals.approver(), false)
	sess := session.New("s1", w.ws)
	target := filepath.Join(w.ws, ".git", "hooks", "pre-commit")

	res := e.write(sess, map[string]any{"file_path": target, "content": "#!/bin/sh\n"})
	wrFail(t, res, fs.CodeSandboxDenied, wrDenial(wrWW))
	assert.NoFileExists(t, target)
	assert.Empty(t, approvals.asked(), "a plain call never asks")

	wrOK(t, e.write(sess, map[string]any{
		"file_path": target, "content": "#!/bin/sh\n",
		"sandbox_permissions": "danger-full-access", "justification": "Install the project's hook.",
	}))
	assert.Equal(t, "#!/bin/sh\n", wrDisk(t, target))
	asked := approvals.asked()
	require.Len(t, asked, 1, "the escalation is needed, so the approver is asked")
	assert.Contains(t, asked[0].Boundary, sandboxpolicy.BoundaryProtected)
	assert.Contains(t, asked[0].Boundary, ".git")
}

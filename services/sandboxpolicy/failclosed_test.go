package sandboxpolicy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

func TestFailClosedEdges(t *testing.T) {
	t.Run("a nil ApproverFunc answers unavailable, never grants or panics", func(t *testing.T) {
		var approver sandboxpolicy.ApproverFunc
		mode, err := sandboxpolicy.ApproveEscalation(context.Background(), approver, session.New("s", "/ws"),
			"write", sandboxpolicy.SubjectOperation, sandboxpolicy.DangerFullAccess, sandboxpolicy.ReadOnly, "because")
		require.ErrorIs(t, err, sandboxpolicy.ErrEscalationRefused)
		assert.Empty(t, mode)
		assert.Contains(t, err.Error(), "no approval channel is available")
	})
	t.Run("a relative TMPDIR grants nothing", func(t *testing.T) {
		t.Setenv("TMPDIR", "relative/tmp")
		svc, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: "/ws"})
		require.NoError(t, err)
		assert.Equal(t, []string{sandboxpolicy.CanonicalPath("/tmp")}, svc.TempRoots())
	})
	t.Run("a sandbox/mode event carrying a pointer still folds", func(t *testing.T) {
		s := session.New("s", "")
		sandboxpolicy.SetMode(s, sandboxpolicy.WorkspaceWrite)
		s.Append(session.Event{Type: sandboxpolicy.EventMode, Data: &sandboxpolicy.ModeEvent{Mode: sandboxpolicy.ReadOnly}})
		mode, ok := sandboxpolicy.OverrideOf(s)
		assert.True(t, ok)
		assert.Equal(t, sandboxpolicy.ReadOnly, mode)
	})
}

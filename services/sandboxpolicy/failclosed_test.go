package sandboxpolicy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

func TestFailClosedEdges(t *testing.T) {
	t.Run("a nil ApproverFunc answers unavailable, never grants or panics", func(t *testing.T) {
		var approver sandbox.ApproverFunc
		mode, err := approveEscalation(context.Background(), approver, session.New("s", "/ws"),
			"write", sandbox.SubjectOperation, sandbox.DangerFullAccess, sandbox.ReadOnly, "because")
		require.EqualValues(t, sandboxpolicy.CodeEscalationRefused, escalationCode(err))
		assert.Empty(t, mode)
		assert.Contains(t, err.Error(), "no approval channel is available")
	})
	t.Run("a relative TMPDIR grants nothing", func(t *testing.T) {
		t.Setenv("TMPDIR", "relative/tmp")
		svc, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: "/ws"})
		require.NoError(t, err)
		assert.Equal(t, []string{sandboxpolicy.CanonicalPath("/tmp")}, svc.Default().TempRoots)
	})
	t.Run("a sandbox/mode event carrying a pointer still folds", func(t *testing.T) {
		s := session.New("s", "")
		require.NoError(t, sandboxpolicy.SetMode(s, sandbox.WorkspaceWrite))
		require.NoError(t, s.Append(session.Event{Type: sandboxpolicy.EventMode, Data: &sandboxpolicy.ModeEvent{Mode: sandbox.ReadOnly}}))
		mode, ok := sandboxpolicy.OverrideOf(s)
		assert.True(t, ok)
		assert.Equal(t, sandbox.ReadOnly, mode)
	})
}

func TestSessionRootIsPinnedAtFirstResolution(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{"ws", "elsewhere"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	link := filepath.Join(dir, "cwd")
	require.NoError(t, os.Symlink(filepath.Join(dir, "ws"), link))
	svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: dir})
	require.NoError(t, err)
	s := session.New("s", link)
	assert.Equal(t, filepath.Join(dir, "ws"), svc.Resolve(s, sandbox.FileTools, "").WorkspaceRoot)
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink(filepath.Join(dir, "elsewhere"), link))
	assert.Equal(t, filepath.Join(dir, "ws"), svc.Resolve(s, sandbox.FileTools, "").WorkspaceRoot, "retargeting the cwd's link does not move the session's root")
	assert.Equal(t, filepath.Join(dir, "elsewhere"), svc.Resolve(session.New("t", link), sandbox.FileTools, "").WorkspaceRoot, "a new session sees the link as it is now")
}

func TestResumedSessionIsChecked(t *testing.T) {
	registry, err := invariants.New(invariants.Config{Enabled: true})
	require.NoError(t, err)
	tracker := session.NewTracker()
	app := fx.New(fx.NopLogger, fx.Supply(registry, tracker), invariants.Companion(sandboxpolicyPkg, sandboxpolicy.Invariants))
	require.NoError(t, app.Err())
	require.NoError(t, app.Start(context.Background()))
	defer func() { require.NoError(t, app.Stop(context.Background())) }()
	_, err = tracker.Resume("r", "/ws", session.Event{Type: sandboxpolicy.EventMode, Data: sandboxpolicy.ModeEvent{Mode: "host-root"}})
	require.ErrorIs(t, err, invariants.ErrInvariant, "a resumed session's history is checked")
}

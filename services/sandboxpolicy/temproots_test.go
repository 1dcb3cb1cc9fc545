package sandboxpolicy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestSetTempRoots (issue 26): a session's own temp roots replace the
// deployment's in every policy resolved for it; the last event wins; an
// empty list leaves it none; a relative root grants nothing.
func TestSetTempRoots(t *testing.T) {
	svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws", TempRoots: []string{"/shared-tmp"}})
	require.NoError(t, err)
	s := session.New("s", "/srv/ws")
	assert.Equal(t, []string{"/shared-tmp"}, svc.Resolve(s, sandbox.FileTools, "").TempRoots, "the deployment's until set")

	require.NoError(t, sandboxpolicy.SetTempRoots(s, []string{"/shared-tmp/session-1"}))
	p := svc.Resolve(s, sandbox.Commands, "")
	assert.Equal(t, []string{"/shared-tmp/session-1"}, p.TempRoots)
	assert.NotContains(t, p.WritableRoots(), "/shared-tmp")
	assert.Contains(t, p.WritableRoots(), "/shared-tmp/session-1")

	require.NoError(t, sandboxpolicy.SetTempRoots(s, []string{"relative", "/b/../c"}))
	assert.Equal(t, []string{"/c"}, svc.Resolve(s, sandbox.FileTools, "").TempRoots, "the last wins, cleaned, relative dropped")

	require.NoError(t, sandboxpolicy.SetTempRoots(s, nil))
	p = svc.Resolve(s, sandbox.FileTools, "")
	assert.Empty(t, p.TempRoots)
	assert.Equal(t, []string{"/srv/ws"}, p.WritableRoots(), "no temp area at all")

	other := session.New("o", "/srv/ws")
	assert.Equal(t, []string{"/shared-tmp"}, svc.Resolve(other, sandbox.FileTools, "").TempRoots, "another session keeps the deployment's")
}

package sandboxpolicy_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestSessionTempBesideAnOrphanSweep (issue 37: `harness call` got "no
// such file or directory" at load 10): a server starting sweeps the temp
// root for areas no process holds while others make theirs; every area
// made is there, held, once NewSessionTemp returns, and the sweep removes
// only a dead one's: an unheld area, and one whose making stopped a minute
// ago or more (a fresh one is being made).
func TestSessionTempBesideAnOrphanSweep(t *testing.T) {
	parent := t.TempDir()
	stop := make(chan struct{})
	var sweeps sync.WaitGroup
	sweeps.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				sandboxpolicy.RemoveOrphanTemps(parent)
			}
		}
	})
	var made []*sandboxpolicy.SessionTemp
	for range 300 {
		st, err := sandboxpolicy.NewSessionTemp(parent, "")
		require.NoError(t, err)
		made = append(made, st)
	}
	close(stop)
	sweeps.Wait()
	for _, st := range made {
		assert.DirExists(t, st.Path)
		assert.True(t, strings.HasPrefix(filepath.Base(st.Path), sandboxpolicy.SessionTempPrefix), st.Path)
		require.NoError(t, st.Remove())
	}

	dead := filepath.Join(parent, sandboxpolicy.SessionTempPrefix+"dead")
	fresh := filepath.Join(parent, ".harness-making-session-fresh")
	stale := filepath.Join(parent, ".harness-making-session-stale")
	other := filepath.Join(parent, "other")
	for _, d := range []string{dead, fresh, stale, other} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	old := time.Now().Add(-2 * time.Minute)
	require.NoError(t, os.Chtimes(stale, old, old))
	require.NoError(t, os.Chtimes(other, old, old))
	assert.Equal(t, 2, sandboxpolicy.RemoveOrphanTemps(parent))
	assert.NoDirExists(t, dead)
	assert.NoDirExists(t, stale)
	assert.DirExists(t, fresh)
	assert.DirExists(t, other)
}

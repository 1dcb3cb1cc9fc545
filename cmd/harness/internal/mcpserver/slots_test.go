package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/toolexec"
)

// TestQueuedExecsHoldNoCallSlot (issue 23): with the one command slot busy
// and three more execs queued for it, more than the two call slots, a quick
// call is answered before any exec: execs waiting for a command slot, and
// the running one, hold no call slot. Then every exec finishes.
func TestQueuedExecsHoldNoCallSlot(t *testing.T) {
	ws, ex := localExecTool(t, toolexec.Config{MaxConcurrent: 1})
	p := startPipe(t, mcpserver.Options{Workspace: ws, MaxConcurrentCalls: 2}, `{}`, ex.Exec(), quick)

	args, err := json.Marshal(map[string]any{"command": "echo x >> started; while [ ! -e go ]; do sleep 0.02; done"})
	require.NoError(t, err)
	for id := 1; id <= 4; id++ {
		p.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"exec","arguments":`+string(args)+`}}`)
	}
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(ws, "started"))
		return len(b) > 0
	}, pipeWait, 10*time.Millisecond, "the first exec runs")

	p.call(t, 10, "quick")
	m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	assert.Equal(t, "10", string(m.ID), "the quick call is answered while the execs still wait")
	b, err := os.ReadFile(filepath.Join(ws, "started"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b), "one command runs at a time, the others still queue")

	require.NoError(t, os.WriteFile(filepath.Join(ws, "go"), nil, 0o644))
	done := map[string]bool{}
	for range 4 {
		m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
		require.NotNil(t, m.Result, "exec %s", m.ID)
		assert.False(t, m.Result.IsError, resultText(m))
		assert.True(t, strings.HasPrefix(resultText(m), "exit code 0"), resultText(m))
		done[string(m.ID)] = true
	}
	assert.Len(t, done, 4)
}

// localExecTool returns a workspace (canonical) and the exec tools over the
// plain runner under workspace-write there, closed when t ends.
func localExecTool(t *testing.T, cfg toolexec.Config) (string, *toolexec.Tool) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}})
	require.NoError(t, err)
	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	ex, err := toolexec.New(cfg, toolexec.Deps{Runner: r, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ex.Close(context.Background())) })
	return ws, ex
}

package mcpserver_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolexec"
)

// TestBackgroundEndsWithTheConnection (issue 23): a background command
// started over a connection is killed, its whole tree, when that connection
// ends (its session ends); another connection's keeps running.
func TestBackgroundEndsWithTheConnection(t *testing.T) {
	ws, ex := localExecTool(t, toolexec.Config{})
	srv, err := mcpserver.New(mcpserver.Options{Version: "test", Workspace: ws}, ex.All(), nil, session.NewTracker())
	require.NoError(t, err)

	connect := func() (*mcp.ClientSession, *mcp.ServerSession) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(t.Context(), st, nil)
		require.NoError(t, err)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), ct, nil)
		require.NoError(t, err)
		return cs, ss
	}
	mine, theirs := fmt.Sprintf("901.%d1", os.Getpid()), fmt.Sprintf("901.%d2", os.Getpid())
	start := func(cs *mcp.ClientSession, m string) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{
			"command": "setsid sleep " + m + " & exec sleep " + m, "background": true,
		}})
		require.NoError(t, err)
		require.False(t, res.IsError, res.Content)
	}
	a, aSrv := connect()
	b, bSrv := connect()
	defer func() { _ = b.Close(); _ = bSrv.Wait() }()
	start(a, mine)
	start(b, theirs)
	require.Eventually(t, func() bool { return len(sleepers(mine)) == 2 && len(sleepers(theirs)) == 2 }, pipeWait, 20*time.Millisecond)

	require.NoError(t, a.Close())
	_ = aSrv.Wait()
	require.Eventually(t, func() bool { return len(sleepers(mine)) == 0 }, pipeWait, 20*time.Millisecond,
		"a background command outlived its connection")
	assert.Len(t, sleepers(theirs), 2, "the other connection's command runs on")
}

// sleepers returns the live host pids running `sleep m`.
func sleepers(m string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), "sleep\x00"+m) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !strings.Contains(string(stat), ") Z") {
			out = append(out, e.Name())
		}
	}
	return out
}

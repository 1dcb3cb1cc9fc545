package mcpserver_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/tool"
)

// TestProgressNotifications: a call whose client sent a progressToken gets
// the tool's progress as notifications/progress carrying that token and the
// report's message, the first report at once and then at most one per
// 100 ms; a call without a
// token gets none and its tool sees no Progress.
func TestProgressNotifications(t *testing.T) {
	var sawProgress []bool
	var mu sync.Mutex
	reporting := &tool.Tool{
		Name: "report", Description: "reports progress", InputSchema: object(), OutputSchema: object(),
		Handler: func(_ context.Context, call tool.Call) tool.Result {
			mu.Lock()
			sawProgress = append(sawProgress, call.Progress != nil)
			mu.Unlock()
			if call.Progress == nil {
				return tool.Result{Text: "done", Value: map[string]any{}}
			}
			call.Progress(1, 4, "")
			call.Progress(2, 4, "dropped") // within 100 ms of the first: dropped
			time.Sleep(150 * time.Millisecond)
			call.Progress(3, 4, "three")
			time.Sleep(150 * time.Millisecond)
			call.Progress(4, 4, "four")
			return tool.Result{Text: "done", Value: map[string]any{}}
		},
	}
	srv, err := mcpserver.New(mcpserver.Options{Version: "test"}, []*tool.Tool{reporting}, nil, nil)
	require.NoError(t, err)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	var got []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close(); _ = ss.Wait() }()

	params := &mcp.CallToolParams{Name: "report", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.False(t, res.IsError)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "report", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError)

	// Notifications may trail the result they belong to.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []bool{true, false}, sawProgress, "only the call with a token has a Progress")
	var progress []float64
	var messages []string
	for _, p := range got {
		assert.Equal(t, "tok-1", p.ProgressToken)
		assert.InDelta(t, 4.0, p.Total, 0)
		progress = append(progress, p.Progress)
		messages = append(messages, p.Message)
	}
	assert.Equal(t, []float64{1, 3, 4}, progress)
	assert.Equal(t, []string{"", "three", "four"}, messages, "each report's message travels in its notification")
}

package mcpserver_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestApprovalStateCannotBeForgedOrReplayed: on the 2026-07-28 protocol an
// approval travels as an input response echoed with the request state the
// server issued. A state the server did not issue, one issued for other
// arguments, or one already used, counts for nothing: the server asks again
// and nothing is written.
func TestApprovalStateCannotBeForgedOrReplayed(t *testing.T) {
	w := newLoadWorld(t)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := w.srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Wait() //nolint:errcheck // test cleanup
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the test answers by hand
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close() //nolint:errcheck // test cleanup

	target := filepath.Join(w.outside, "x.txt")
	args := map[string]any{"file_path": target, "content": "x", "sandbox_permissions": "danger-full-access", "justification": "why"}
	yes := mcp.InputResponseMap{"sandbox_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	call := func(a map[string]any, state string, responses mcp.InputResponseMap) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: a, RequestState: state, InputResponses: responses})
		require.NoError(t, err)
		return res
	}

	forged := call(args, "approval:00:00", yes)
	require.NotEmpty(t, forged.InputRequests, "a forged state is asked again")
	assert.NoFileExists(t, target)

	first := call(args, "", nil)
	require.NotEmpty(t, first.InputRequests, "the first call asks")
	require.NotEmpty(t, first.RequestState)

	other := map[string]any{"file_path": filepath.Join(w.outside, "y.txt"), "content": "x", "sandbox_permissions": "danger-full-access", "justification": "why"}
	res := call(other, first.RequestState, yes)
	require.NotEmpty(t, res.InputRequests, "a state issued for other arguments is asked again")
	assert.NoFileExists(t, filepath.Join(w.outside, "y.txt"))

	second := call(args, "", nil)
	res = call(args, second.RequestState, yes)
	require.Empty(t, res.InputRequests)
	require.False(t, res.IsError)
	assert.FileExists(t, target, "the answer to the state issued for this call lands it")

	again := call(args, second.RequestState, yes)
	require.NotEmpty(t, again.InputRequests, "a used state is not accepted twice")
}

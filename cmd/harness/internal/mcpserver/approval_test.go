package mcpserver_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
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
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close() //nolint:errcheck // test cleanup

	target := filepath.Join(w.outside, "x.txt")
	args := map[string]any{"file_path": target, "content": "x", "sandbox_permissions": "danger-full-access", "justification": "why"}
	yes := mcp.InputResponseMap{"sandbox_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}}
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

// TestApprovalFailuresCarryACode: an approval that gets no answer fails the
// call with SANDBOX_APPROVAL_FAILED in _meta, says why, and writes nothing:
// an answer that does not match the prompt's schema, a client that can show
// only url elicitations, and a prompt that timed out on the client.
func TestApprovalFailuresCarryACode(t *testing.T) {
	tests := []struct {
		name   string
		caps   *mcp.ClientCapabilities
		answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want   string
	}{
		{
			name: "an answer that does not match the schema",
			answer: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "yes"}}, nil
			},
			want: "does not match requested schema",
		},
		{
			name: "a url-only elicitation client",
			caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			answer: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
			want: `client does not support "form" elicitation`,
		},
		{
			name: "a prompt that timed out",
			answer: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				defer cancel()
				<-ctx.Done()
				return nil, ctx.Err()
			},
			want: "deadline exceeded",
		},
		{
			// The SDK sends the handler's error as an internal error, the
			// code a closed stream's refusal has too: it is the client's
			// error, not a missing approval channel.
			name: "the client's handler fails",
			answer: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("the approval dialog crashed")
			},
			want: "the approval dialog crashed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newLoadWorld(t)
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := w.srv.MCP().Connect(ctx, st, nil)
			require.NoError(t, err)
			defer ss.Wait() //nolint:errcheck // test cleanup
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
				Capabilities: tc.caps, ElicitationHandler: tc.answer,
			})
			cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			require.NoError(t, err)
			defer cs.Close() //nolint:errcheck // test cleanup

			target := filepath.Join(w.outside, "x.txt")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{
				"file_path": target, "content": "x", "sandbox_permissions": "danger-full-access", "justification": "why",
			}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			assert.Equal(t, "SANDBOX_APPROVAL_FAILED", res.Meta[mcpserver.CodeMetaKey])
			require.Len(t, res.Content, 1)
			text := res.Content[0].(*mcp.TextContent).Text
			assert.Contains(t, text, `sandbox escalation to "danger-full-access": approval failed`)
			assert.Contains(t, text, tc.want)
			assert.NotContains(t, text, "no approval channel")
			assert.NoFileExists(t, target)
		})
	}
}

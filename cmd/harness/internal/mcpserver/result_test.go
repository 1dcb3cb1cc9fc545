package mcpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// TestToResultImages checks that a result's images follow its text as MCP
// image blocks, in order, with their bytes and MIME types.
func TestToResultImages(t *testing.T) {
	res := mcpserver.ToResult(tool.Result{Text: "an image", Images: []tool.Image{
		{MIMEType: "image/png", Data: []byte("\x89PNG")},
		{MIMEType: "image/gif", Data: []byte("GIF89a")},
	}})
	require.Len(t, res.Content, 3)
	assert.Equal(t, &mcp.TextContent{Text: "an image"}, res.Content[0])
	assert.Equal(t, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG")}, res.Content[1])
	assert.Equal(t, &mcp.ImageContent{MIMEType: "image/gif", Data: []byte("GIF89a")}, res.Content[2])
}

// TestTimedOutExecIsStructured (issue 36): a command killed at its timeout
// is an error result that still carries exec's structured result, as its
// output schema declares it: timed_out, the signal and exit code as they
// are, and the output written before the kill.
func TestTimedOutExecIsStructured(t *testing.T) {
	ws, ex := localExecTool(t, toolexec.Config{})
	srv, err := mcpserver.New(mcpserver.Options{Version: "test", Workspace: ws}, ex.All(), nil, session.NewTracker())
	require.NoError(t, err)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close(); _ = ss.Wait() }()

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{
		"command": "echo before; echo err >&2; exec sleep 300", "timeout_ms": 1000,
	}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Equal(t, "EXEC_TIMED_OUT", res.Meta[mcpserver.CodeMetaKey])
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Contains(t, got, "duration_ms")
	delete(got, "duration_ms")
	assert.Equal(t, map[string]any{
		"exit_code": -1.0, "signal": "SIGKILL", "timed_out": true, "workdir": ws,
		"stdout": "before\n", "stderr": "err\n", "stdout_truncated": false, "stderr_truncated": false,
	}, got)
}

// TestToResultCarriesAnErrorsValue: an error result with a structured value
// keeps it, next to isError and its code; one without has none.
func TestToResultCarriesAnErrorsValue(t *testing.T) {
	res := mcpserver.ToResult(tool.Result{Text: "Error: x", IsError: true, Code: "C", Value: map[string]any{"a": 1}})
	assert.Equal(t, map[string]any{"a": 1}, res.StructuredContent)
	assert.Equal(t, mcp.Meta{mcpserver.CodeMetaKey: errcode.Code("C")}, res.Meta)
	res = mcpserver.ToResult(tool.Result{Text: "Error: x", IsError: true, Code: "C"})
	assert.Nil(t, res.StructuredContent)
}

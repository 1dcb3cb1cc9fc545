package mcpserver_test

import (
	"context"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/tool"
)

// TestNewRefusesUnservableTools: New returns an error, not the SDK's panic,
// for a tool it cannot serve; tools without an output schema are served
// sorted by name, declaring none.
func TestNewRefusesUnservableTools(t *testing.T) {
	ok := func(name string) *tool.Tool {
		return &tool.Tool{Name: name, InputSchema: object(), Handler: func(context.Context, tool.Call) tool.Result { return tool.Result{} }}
	}
	with := func(name string, edit func(*tool.Tool)) *tool.Tool {
		t := ok(name)
		edit(t)
		return t
	}
	for _, tc := range []struct {
		name  string
		tools []*tool.Tool
		want  string
	}{
		{"nil tool", []*tool.Tool{ok("a"), nil}, "mcpserver: tool 1 is nil"},
		{"no name", []*tool.Tool{ok("")}, "mcpserver: tool 0 has no name"},
		{"repeated name", []*tool.Tool{ok("a"), ok("b"), ok("a")}, `mcpserver: two tools are named "a"`},
		{"no handler", []*tool.Tool{with("a", func(t *tool.Tool) { t.Handler = nil })}, `mcpserver: tool "a" has no handler`},
		{"no input schema", []*tool.Tool{with("a", func(t *tool.Tool) { t.InputSchema = nil })}, `mcpserver: tool "a": its input schema must have type "object"`},
		{"input schema not an object", []*tool.Tool{with("a", func(t *tool.Tool) { t.InputSchema = &jsonschema.Schema{Type: "string"} })}, `mcpserver: tool "a": its input schema must have type "object"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := mcpserver.New(mcpserver.Options{}, tc.tools, nil, nil)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, srv)
		})
	}

	srv, err := mcpserver.New(mcpserver.Options{}, []*tool.Tool{ok("b"), ok("a")}, nil, nil)
	require.NoError(t, err)
	var names []string
	for _, d := range srv.Tools() {
		names = append(names, d.Name)
		assert.Nil(t, d.OutputSchema, "a tool without an output schema declares none")
	}
	assert.Equal(t, []string{"a", "b"}, names)
}

// TestInstructionsNameEveryTool: the server's instructions name each file
// tool and each command tool (exec and its exec_* companions) it serves,
// and no shell commands when it serves none.
func TestInstructionsNameEveryTool(t *testing.T) {
	mk := func(name string) *tool.Tool {
		return &tool.Tool{Name: name, InputSchema: object(), Handler: func(context.Context, tool.Call) tool.Result { return tool.Result{} }}
	}
	instructions := func(names ...string) string {
		var tools []*tool.Tool
		for _, n := range names {
			tools = append(tools, mk(n))
		}
		srv, err := mcpserver.New(mcpserver.Options{Version: "test"}, tools, nil, nil)
		require.NoError(t, err)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(t.Context(), st, nil)
		require.NoError(t, err)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), ct, nil)
		require.NoError(t, err)
		defer func() { _ = cs.Close(); _ = ss.Wait() }()
		return cs.InitializeResult().Instructions
	}
	got := instructions("read", "exec_output", "write", "exec", "exec_kill")
	assert.Contains(t, got, "Filesystem tools: read, write.")
	assert.Contains(t, got, "Shell commands: exec, exec_kill, exec_output, under the same sandbox mode.")
	assert.NotContains(t, instructions("read"), "Shell commands")
}

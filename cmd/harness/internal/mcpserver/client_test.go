package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/tool"
)

// probe is a tool that keeps the Client of every call it runs.
type probe struct {
	mu   sync.Mutex
	seen []string
}

func (p *probe) tool() *tool.Tool {
	return &tool.Tool{
		Name: "probe", InputSchema: &jsonschema.Schema{Type: "object"},
		Handler: func(_ context.Context, c tool.Call) tool.Result {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.seen = append(p.seen, c.Client)
			return tool.Result{Text: "ok"}
		},
	}
}

func (p *probe) clients() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// TestCallsCarryTheClient: every call a tool runs carries the client's
// name and version, over stdio, on both protocol eras: from its initialize
// (2025-11-25), or from the request's _meta (2026-07-28); a name the
// client made too long is cut.
func TestCallsCarryTheClient(t *testing.T) {
	tests := []struct {
		name, protocol, client, version, want string
	}{
		{name: "2025-11-25: the initialize names it", protocol: "2025-11-25", client: "claude-code", version: "2.1.0", want: "claude-code 2.1.0"},
		{name: "2026-07-28: each request's _meta names it", protocol: "2026-07-28", client: "codex", version: "0.9", want: "codex 0.9"},
		{name: "a client without a version is its name", protocol: "2025-11-25", client: "bare", want: "bare"},
		{name: "a long name is cut", protocol: "2026-07-28", client: strings.Repeat("n", 500), version: "1", want: strings.Repeat("n", 200)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{}
			srv, err := mcpserver.New(mcpserver.Options{Workspace: t.TempDir()}, []*tool.Tool{p.tool()}, nil, nil)
			require.NoError(t, err)
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- srv.Run(t.Context(), &mcpserver.StdioTransport{Reader: inR, Writer: outW}) }()

			client := mcp.NewClient(&mcp.Implementation{Name: tc.client, Version: tc.version}, nil)
			cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: tc.protocol})
			require.NoError(t, err)
			for range 2 {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{}})
				require.NoError(t, err)
				require.False(t, res.IsError)
			}
			require.NoError(t, cs.Close())
			require.NoError(t, <-done)
			_ = outW.Close()
			assert.Equal(t, []string{tc.want, tc.want}, p.clients())
		})
	}

	t.Run("2026-07-28 without an initialize: the request's _meta names it", func(t *testing.T) {
		p := &probe{}
		srv, err := mcpserver.New(mcpserver.Options{Workspace: t.TempDir()}, []*tool.Tool{p.tool()}, nil, nil)
		require.NoError(t, err)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.Run(t.Context(), &mcpserver.StdioTransport{Reader: inR, Writer: outW}) }()
		_, err = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"probe","arguments":{},"_meta":{`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"stateless","version":"3"},`+
			`"io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n")
		require.NoError(t, err)
		sc := bufio.NewScanner(outR)
		require.True(t, sc.Scan())
		assert.Contains(t, sc.Text(), `"result"`)
		require.NoError(t, inW.Close())
		require.NoError(t, <-done)
		_ = outW.Close()
		assert.Equal(t, []string{"stateless 3"}, p.clients())
	})
}

package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// BenchmarkServeCall measures one MCP tool call end to end through the
// composed server over in-memory transports (JSON-RPC, the SDK, the tool,
// the backend): the server's per-call cost, for profiling.
func BenchmarkServeCall(b *testing.B) {
	kib := strings.Repeat("0123456789abcde\n", 64)
	for _, name := range []string{"read", "write"} {
		b.Run(name, func(b *testing.B) {
			w := newLoadWorld(b)
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			_, err := w.srv.MCP().Connect(ctx, st, nil)
			require.NoError(b, err)
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs, err := client.Connect(ctx, ct, nil)
			require.NoError(b, err)
			defer cs.Close() //nolint:errcheck // benchmark cleanup
			call := func(tool string, args map[string]any) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %v", tool, err, res)
				}
			}
			call("write", map[string]any{"file_path": "bench.txt", "content": kib})
			call("read", map[string]any{"file_path": "bench.txt"})
			b.ResetTimer()
			for range b.N {
				if name == "read" {
					call("read", map[string]any{"file_path": "bench.txt"})
				} else {
					call("write", map[string]any{"file_path": "bench.txt", "content": kib})
				}
			}
		})
	}
}

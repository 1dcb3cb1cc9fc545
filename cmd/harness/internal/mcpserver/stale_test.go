package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnParallelCallsThroughServe covers issue 13, items 9 and 11, as a
// client sees them through the server: one connection reads a file, then
// sends four writes of it at once (all succeed, the disk holds one of them
// intact), then, after a touch, edits it (not stale: same content).
func TestOwnParallelCallsThroughServe(t *testing.T) {
	w := newLoadWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := w.connect(ctx, t, "")
	defer func() { assert.NoError(t, conn.close()) }()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := conn.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res
	}
	p := filepath.Join(w.ws, "shared.txt")

	require.False(t, call("read", map[string]any{"file_path": "shared.txt"}).IsError)
	contents := []string{"one\n", "two two\n", "three three three\n", "four four four four\n"}
	results := make([]*mcp.CallToolResult, len(contents))
	var wg sync.WaitGroup
	for i, c := range contents {
		wg.Go(func() {
			results[i], _ = conn.cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"file_path": "shared.txt", "content": c}})
		})
	}
	wg.Wait()
	for i, res := range results {
		require.NotNil(t, res, "write %d", i)
		assert.False(t, res.IsError, "write %d: %s", i, loadText(res))
	}
	disk, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Contains(t, contents, string(disk), "the last write wins, intact")

	require.False(t, call("read", map[string]any{"file_path": "shared.txt"}).IsError)
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(p, later, later), "touch")
	old := string(disk[:3])
	res := call("edit", map[string]any{"file_path": "shared.txt", "old_string": old, "new_string": "NEW", "replace_all": true})
	require.False(t, res.IsError, loadText(res))
	disk2, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, strings.ReplaceAll(string(disk), old, "NEW"), string(disk2))
}

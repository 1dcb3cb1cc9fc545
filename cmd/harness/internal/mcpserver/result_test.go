package mcpserver_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/tool"
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

//go:build linux

package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeDenialsToAClientThatCannotBeAsked: to an MCP client that
// declared no elicitation, a denial offers no escalation whose retry would
// be refused for want of an approval channel; it says why none is offered
// and how the user can allow it (a wider --mode, --allow-domain, the
// deny-read set), for a file tool's write, a command's write and a read of
// a deny-read file; nothing is written; in both protocol generations (the
// capability declared at initialize, and per request). A client that can be
// asked is still offered the escalation (TestServeEndToEnd).
func TestServeDenialsToAClientThatCannotBeAsked(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: the commands run confined")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	w := newE2EWorld(t)
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, ".env"), []byte("TOKEN=secret\n"), 0o600))
	const why = "[sandbox: no escalation here: this MCP client cannot ask the user (it declared no elicitation); "
	outside := filepath.Join(w.outside, "x.txt")
	cases := []struct {
		name, tool string
		args       map[string]any
		remedy     string
	}{
		{"a write outside the workspace", "write", map[string]any{"file_path": outside, "content": "x"}, "a wider mode"},
		{"a command writing outside", "exec", map[string]any{"command": "echo x > " + outside}, "a wider mode"},
		{"a read of a deny-read file", "read", map[string]any{"file_path": filepath.Join(w.ws, ".env")}, "the deny-read pattern"},
	}
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs, _ := serveWithoutElicitation(ctx, t, bin, proto.version, "--workspace", w.ws, "--mode", "workspace-write", "--temp-root", w.ws)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
					require.NoError(t, err)
					require.True(t, res.IsError, text(res))
					assert.Contains(t, text(res), why, "the denial says why no escalation is offered")
					assert.Contains(t, text(res), c.remedy)
					assert.NotContains(t, text(res), "escalation available", "an escalation this client cannot have is offered")
					_, err = os.Stat(outside)
					assert.True(t, os.IsNotExist(err), "nothing is written outside")
				})
			}
		})
	}
}

package mcpserver_test

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// rootsWorld is a workspace-write server without --workspace, so sessions
// take their roots from the client, and its log.
type rootsWorld struct {
	base, ws1, ws2, outside string
	srv                     *mcpserver.Server
	logs                    *observer.ObservedLogs
}

func newRootsWorld(t *testing.T) rootsWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws1/", "ws2/", "outside/", "tmp/")
	w := rootsWorld{base: base, ws1: filepath.Join(base, "ws1"), ws2: filepath.Join(base, "ws2"), outside: filepath.Join(base, "outside")}
	cfg := config.Config{
		FS: "sandbox", Mode: "workspace-write", TempRoots: []string{filepath.Join(base, "tmp")},
		LogLevel: "error", LogFormat: "json",
	}
	core, logs := observer.New(zap.InfoLevel)
	w.logs = logs
	var tools []*tool.Tool
	opts, err := compose.Options(cfg, io.Discard, fx.Invoke(func(g tool.Group) { tools = g.Tools }))
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	w.srv, err = mcpserver.New(mcpserver.Options{Version: "roots"}, tools, zap.New(core), nil)
	require.NoError(t, err)
	return w
}

// connect opens a 2025-11-25 connection whose client announces roots.
func (w rootsWorld) connect(t *testing.T, roots ...string) (*mcp.Client, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := w.srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "roots", Version: "v0"}, nil)
	for _, r := range roots {
		client.AddRoots(&mcp.Root{URI: r}) //nolint:staticcheck // roots (SEP-2577) are served for 2025-11-25 clients
	}
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return client, cs
}

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

func writeCall(t *testing.T, cs *mcp.ClientSession, path, content string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"file_path": path, "content": content}})
	require.NoError(t, err)
	return res
}

func disk(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestRootsFollowTheClient (issue 14, item 5): every usable file:// root is
// writable, relative paths resolve against the first, roots/list_changed
// re-reads them, and a removed root stops being writable from the next
// call; refused roots (/, a path climbing to /, not clean) grant nothing and
// are logged with the reason.
func TestRootsFollowTheClient(t *testing.T) {
	w := newRootsWorld(t)
	client, cs := w.connect(t, fileURI(w.ws1), fileURI(w.ws2), "file:///", "file:///tmp/%2e%2e", "file:///a/../")

	res := writeCall(t, cs, "rel.txt", "first root")
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, "first root", disk(t, filepath.Join(w.ws1, "rel.txt")), "a relative path resolves against the first root")
	res = writeCall(t, cs, filepath.Join(w.ws2, "b.txt"), "second root")
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, "second root", disk(t, filepath.Join(w.ws2, "b.txt")), "the second root is writable too")
	res = writeCall(t, cs, filepath.Join(w.outside, "x.txt"), "x")
	require.True(t, res.IsError)
	assert.NoFileExists(t, filepath.Join(w.outside, "x.txt"), "a refused root of / grants nothing")

	refused := map[string]string{}
	for _, e := range w.logs.FilterMessage("client root refused").All() {
		refused[e.ContextMap()["uri"].(string)] = e.ContextMap()["reason"].(string)
	}
	assert.Contains(t, refused["file:///"], `it is "/"`)
	assert.Contains(t, refused["file:///tmp/%2e%2e"], "not clean")
	assert.Contains(t, refused["file:///a/../"], "not clean")

	client.RemoveRoots(fileURI(w.ws2)) //nolint:staticcheck // roots (SEP-2577) are served for 2025-11-25 clients
	res = writeCall(t, cs, filepath.Join(w.ws2, "c.txt"), "x")
	require.True(t, res.IsError, "a removed root is not writable from the next call")
	assert.Equal(t, "FS_SANDBOX_DENIED", res.Meta[mcpserver.CodeMetaKey])
	assert.NoFileExists(t, filepath.Join(w.ws2, "c.txt"))

	client.AddRoots(&mcp.Root{URI: fileURI(w.ws2)}) //nolint:staticcheck // roots (SEP-2577) are served for 2025-11-25 clients
	res = writeCall(t, cs, filepath.Join(w.ws2, "d.txt"), "back")
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, "back", disk(t, filepath.Join(w.ws2, "d.txt")))
}

// TestOnlyRootIsSlash (issue 12): a client whose only root is file:/// has
// no workspace: a mutation is denied with a message saying so.
func TestOnlyRootIsSlash(t *testing.T) {
	w := newRootsWorld(t)
	_, cs := w.connect(t, "file:///")
	target := filepath.Join(w.outside, "x.txt")
	res := writeCall(t, cs, target, "x")
	require.True(t, res.IsError)
	assert.Equal(t, "FS_SANDBOX_DENIED", res.Meta[mcpserver.CodeMetaKey])
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, sandbox.NoWorkspaceMarker)
	assert.NoFileExists(t, target)
}

// TestServeFromSlash (issue 12): serve started from / without --workspace,
// for a client that announces no roots, has no workspace: the fallback
// never becomes /.
func TestServeFromSlash(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "tmp/", "outside/")
	t.Chdir("/")
	w := newRootsWorld(t)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := w.srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "noroots", Version: "v0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer func() {
		_ = cs.Close()
		_ = ss.Wait()
	}()
	target := filepath.Join(base, "outside", "x.txt")
	res := writeCall(t, cs, target, "x")
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, sandbox.NoWorkspaceMarker)
	assert.NoFileExists(t, target)
}

// cwdTool answers with the session's working directory.
var cwdTool = &tool.Tool{
	Name: "cwd", Description: "the session's cwd", InputSchema: object(), OutputSchema: object(),
	Handler: func(ctx context.Context, _ tool.Call) tool.Result {
		return tool.Result{Text: session.FromContext(ctx).Cwd(), Value: map[string]any{}}
	},
}

// TestSlowRootsAreWaitedFor (issue 14, item 5): a client slow to answer
// roots/list is waited for, up to the configured timeout, before any
// fallback; past it the session falls back to the working directory.
func TestSlowRootsAreWaitedFor(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	wd, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Chdir(wd)
	tests := []struct {
		name    string
		timeout time.Duration
		answer  bool
		want    string
	}{
		{name: "an answer after 300 ms within a 10 s timeout gives the root", timeout: 10 * time.Second, answer: true, want: root},
		{name: "no answer within 200 ms falls back to the working directory", timeout: 200 * time.Millisecond, want: wd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startPipe(t, mcpserver.Options{RootsTimeout: tc.timeout}, `{"roots":{"listChanged":true}}`, cwdTool)
			p.call(t, 1, "cwd")
			ask := p.await(t, func(m pipeMsg) bool { return m.Method == "roots/list" })
			if tc.answer {
				time.Sleep(300 * time.Millisecond)
				p.send(t, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"roots":[{"uri":"`+fileURI(root)+`"}]}}`)
			}
			m := p.await(t, func(m pipeMsg) bool { return string(m.ID) == "1" })
			assert.Equal(t, tc.want, resultText(m))
		})
	}
}

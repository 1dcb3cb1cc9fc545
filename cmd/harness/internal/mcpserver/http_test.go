package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// httpWorld is a composed server behind its HTTP front end, with two
// principals, alice and bob, each owning one workspace outside /tmp.
type httpWorld struct {
	srv     *mcpserver.Server
	tracker *session.Tracker
	front   *mcpserver.HTTPHandler
	url     string
	base    string
	alice   string // alice's workspace
	bob     string // bob's workspace
	temp    string
}

// httpTokens are the test's bearer tokens and their subjects.
var httpTokens = map[string]string{"alice-token": "alice", "bob-token": "bob", "carol-token": "carol"}

func newHTTPWorld(t *testing.T, tune func(*mcpserver.HTTPOptions)) *httpWorld {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "harness-http-")
	require.NoError(t, err)
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	w := &httpWorld{base: base, alice: filepath.Join(base, "alice"), bob: filepath.Join(base, "bob"), temp: filepath.Join(base, "tmp")}
	for _, d := range []string{w.alice, w.bob, w.temp} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.bob, "bob.txt"), []byte("bob's own\n"), 0o644))
	cfg := config.Config{
		FS: "sandbox", Mode: "read-only", TempRoots: []string{w.temp},
		LogLevel: "error", LogFormat: "json", Exec: "off",
	}
	opts, err := compose.Options(cfg, io.Discard,
		fx.Supply(mcpserver.Options{Version: "http"}),
		mcpserver.Module,
		fx.Populate(&w.srv, &w.tracker),
	)
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if sub, ok := httpTokens[token]; ok {
			return &auth.TokenInfo{UserID: sub}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	principals := map[string]mcpserver.Principal{
		"alice": {Name: "alice", Workspaces: []string{w.alice}, Mode: sandbox.WorkspaceWrite, WidestMode: sandbox.WorkspaceWrite},
		"bob":   {Name: "bob", Workspaces: []string{w.bob}, Mode: sandbox.WorkspaceWrite, WidestMode: sandbox.WorkspaceWrite},
	}
	hopts := mcpserver.HTTPOptions{
		Authenticate: auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true}),
		Principals: func(sub string) (mcpserver.Principal, bool) {
			p, ok := principals[sub]
			return p, ok
		},
		AllowedOrigins: []string{"https://app.example.com"},
	}
	if tune != nil {
		tune(&hopts)
	}
	w.front = w.srv.HTTPHandler(hopts)
	hs := httptest.NewServer(w.front)
	t.Cleanup(hs.Close)
	w.url = hs.URL + mcpserver.EndpointPath
	return w
}

// bearer adds a token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens an MCP session over HTTP with token; opts may offer roots.
func (w *httpWorld) connect(t *testing.T, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "v1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: w.url, HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}},
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls tool with args and returns the result's text and code.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (text, code string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if c, ok := res.Meta[mcpserver.CodeMetaKey].(string); ok {
		code = c
	}
	return text, code, res.IsError
}

func TestHTTP_PrincipalsOwnTheirWorkspaces(t *testing.T) {
	w := newHTTPWorld(t, nil)
	alice := w.connect(t, "alice-token", nil)

	text, _, isErr := call(t, alice, "write", map[string]any{"file_path": filepath.Join(w.alice, "a.txt"), "content": "alice's\n"})
	require.False(t, isErr, text)
	got, err := os.ReadFile(filepath.Join(w.alice, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alice's\n", string(got), "alice writes her workspace")

	t.Run("a relative path is inside the principal's workspace, not the process's", func(t *testing.T) {
		_, _, isErr := call(t, alice, "write", map[string]any{"file_path": "rel.txt", "content": "r\n"})
		require.False(t, isErr)
		_, err := os.Stat(filepath.Join(w.alice, "rel.txt"))
		require.NoError(t, err)
	})

	t.Run("alice cannot write bob's workspace", func(t *testing.T) {
		for _, p := range []string{filepath.Join(w.bob, "bob.txt"), filepath.Join(w.bob, "new.txt"), filepath.Join(w.alice, "..", "bob", "x.txt")} {
			text, _, isErr := call(t, alice, "write", map[string]any{"file_path": p, "content": "alice was here\n"})
			assert.True(t, isErr, p)
			assert.Contains(t, text, "sandbox", p)
		}
		got, err := os.ReadFile(filepath.Join(w.bob, "bob.txt"))
		require.NoError(t, err)
		assert.Equal(t, "bob's own\n", string(got), "bob's file unchanged on disk")
		_, err = os.Stat(filepath.Join(w.bob, "new.txt"))
		assert.True(t, os.IsNotExist(err), "nothing created in bob's workspace")
		_, err = os.Stat(filepath.Join(w.bob, "x.txt"))
		assert.True(t, os.IsNotExist(err))
	})

	t.Run("bob's session writes bob's workspace only", func(t *testing.T) {
		bob := w.connect(t, "bob-token", nil)
		_, _, isErr := call(t, bob, "write", map[string]any{"file_path": "b2.txt", "content": "bob 2\n"})
		require.False(t, isErr)
		got, err := os.ReadFile(filepath.Join(w.bob, "b2.txt"))
		require.NoError(t, err)
		assert.Equal(t, "bob 2\n", string(got))
		_, _, isErr = call(t, bob, "write", map[string]any{"file_path": filepath.Join(w.alice, "a.txt"), "content": "bob was here\n"})
		assert.True(t, isErr)
		got, err = os.ReadFile(filepath.Join(w.alice, "a.txt"))
		require.NoError(t, err)
		assert.Equal(t, "alice's\n", string(got), "alice's file unchanged on disk")
	})
}

func TestHTTP_ClientRootsNarrowNeverWiden(t *testing.T) {
	w := newHTTPWorld(t, nil)
	sub := filepath.Join(w.alice, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	for _, tc := range []struct {
		name      string
		roots     []string
		writable  []string
		forbidden []string
	}{
		{"a root inside narrows", []string{sub}, []string{filepath.Join(sub, "in.txt")}, []string{filepath.Join(w.alice, "top.txt")}},
		{"a root outside does not widen", []string{w.bob}, []string{filepath.Join(w.alice, "top2.txt")}, []string{filepath.Join(w.bob, "x.txt")}},
		{"a prefix of another name is not inside", []string{w.alice + "2"}, []string{filepath.Join(w.alice, "top3.txt")}, []string{filepath.Join(w.alice+"2", "x.txt")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "roots", Version: "v1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}})
			for _, r := range tc.roots {
				client.AddRoots(&mcp.Root{URI: "file://" + r})
			}
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
				Endpoint: w.url, HTTPClient: &http.Client{Transport: bearer{token: "alice-token", base: http.DefaultTransport}},
			}, nil)
			require.NoError(t, err)
			defer func() { _ = cs.Close() }()
			for _, p := range tc.writable {
				_, _, isErr := call(t, cs, "write", map[string]any{"file_path": p, "content": "ok\n"})
				assert.False(t, isErr, p)
				_, err := os.Stat(p)
				assert.NoError(t, err, p)
			}
			for _, p := range tc.forbidden {
				_, _, isErr := call(t, cs, "write", map[string]any{"file_path": p, "content": "no\n"})
				assert.True(t, isErr, p)
				_, err := os.Stat(p)
				assert.True(t, os.IsNotExist(err), p)
			}
		})
	}
}

func TestHTTP_SessionsAreIsolated(t *testing.T) {
	w := newHTTPWorld(t, nil)
	f := filepath.Join(w.alice, "shared.txt")
	require.NoError(t, os.WriteFile(f, []byte("v1\n"), 0o644))
	one := w.connect(t, "alice-token", nil)
	two := w.connect(t, "alice-token", nil)
	_, _, isErr := call(t, one, "read", map[string]any{"file_path": f})
	require.False(t, isErr)
	_, code, isErr := call(t, two, "write", map[string]any{"file_path": f, "content": "from two\n"})
	assert.True(t, isErr, "session two never read the file: its read-before-write state is its own")
	assert.NotEmpty(t, code)
	got, _ := os.ReadFile(f)
	assert.Equal(t, "v1\n", string(got))
	_, _, isErr = call(t, one, "write", map[string]any{"file_path": f, "content": "from one\n"})
	assert.False(t, isErr)
	got, _ = os.ReadFile(f)
	assert.Equal(t, "from one\n", string(got))
	assert.Len(t, w.tracker.Sessions(), 2, "one harness session per MCP session")
}

// rawPost sends one initialize request with headers and returns the response.
func rawPost(t *testing.T, url string, header map[string]string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func TestHTTP_Checks(t *testing.T) {
	w := newHTTPWorld(t, func(o *mcpserver.HTTPOptions) { o.AllowedHosts = []string{"127.0.0.1", "mcp.example.com:443"} })
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"a wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"a subject that is no principal", map[string]string{"Authorization": "Bearer carol-token"}, http.StatusForbidden},
		{"a foreign Origin", map[string]string{"Authorization": "Bearer alice-token", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"the null Origin", map[string]string{"Authorization": "Bearer alice-token", "Origin": "null"}, http.StatusForbidden},
		{"a rebinding Host", map[string]string{"Authorization": "Bearer alice-token", "Host": "attacker.example:80"}, http.StatusForbidden},
		{"a listed host on another port", map[string]string{"Authorization": "Bearer alice-token", "Host": "mcp.example.com:8443"}, http.StatusForbidden},
		{"a listed host:port", map[string]string{"Authorization": "Bearer alice-token", "Host": "mcp.example.com:443"}, http.StatusOK},
		{"an allowed Origin", map[string]string{"Authorization": "Bearer alice-token", "Origin": "https://app.example.com"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rawPost(t, w.url, tc.header)
			assert.Equal(t, tc.status, res.StatusCode)
			if tc.header["Origin"] == "https://app.example.com" {
				assert.Equal(t, "https://app.example.com", res.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
	t.Run("the health probe answers anyone", func(t *testing.T) {
		res, err := http.Get(strings.TrimSuffix(w.url, mcpserver.EndpointPath) + mcpserver.HealthPath)
		require.NoError(t, err)
		defer func() { _ = res.Body.Close() }()
		assert.Equal(t, http.StatusOK, res.StatusCode)
	})
	t.Run("a body over the cap is refused", func(t *testing.T) {
		w := newHTTPWorld(t, func(o *mcpserver.HTTPOptions) { o.MaxRequestBytes = 1024 })
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer alice-token")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = res.Body.Close() }()
		assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	})
}

func TestHTTP_DrainFinishesCallsInFlight(t *testing.T) {
	w := newHTTPWorld(t, nil)
	alice := w.connect(t, "alice-token", nil)
	_, _, isErr := call(t, alice, "list", map[string]any{"path": w.alice})
	require.False(t, isErr)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, w.front.Drain(ctx), "no call runs: drained at once")
	text, code, isErr := call(t, alice, "list", map[string]any{"path": w.alice})
	assert.True(t, isErr, text)
	assert.Equal(t, string(mcpserver.CodeShuttingDown), code)
	res := rawPost(t, w.url, map[string]string{"Authorization": "Bearer alice-token"})
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "no new session while draining")
}

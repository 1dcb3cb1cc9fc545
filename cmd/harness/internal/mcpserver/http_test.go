package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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
	"github.com/dsh-go/harness/services/principal"
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
	carol   string // carol's workspace: read-only, may be raised to workspace-write
	temp    string
}

// httpTokens are the test's bearer tokens and their subjects.
var httpTokens = map[string]string{"alice-token": "alice", "bob-token": "bob", "carol-token": "carol", "dave-token": "dave"}

func newHTTPWorld(t *testing.T, tune func(*mcpserver.HTTPOptions)) *httpWorld {
	t.Helper()
	return newHTTPWorldExec(t, "off", tune)
}

// newHTTPWorldExec is newHTTPWorld with the command runner exec ("off",
// "sandbox").
func newHTTPWorldExec(t *testing.T, exec string, tune func(*mcpserver.HTTPOptions)) *httpWorld {
	t.Helper()
	return newHTTPWorldMode(t, exec, "read-only", tune)
}

// newHTTPWorldMode is newHTTPWorldExec with the server's mode.
func newHTTPWorldMode(t *testing.T, exec, mode string, tune func(*mcpserver.HTTPOptions)) *httpWorld {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "harness-http-")
	require.NoError(t, err)
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	w := &httpWorld{base: base, alice: filepath.Join(base, "alice"), bob: filepath.Join(base, "bob"), carol: filepath.Join(base, "carol"), temp: filepath.Join(base, "tmp")}
	for _, d := range []string{w.alice, w.bob, w.carol, w.temp} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.bob, "bob.txt"), []byte("bob's own\n"), 0o644))
	pfile := filepath.Join(base, "principals.yaml")
	require.NoError(t, os.WriteFile(pfile, []byte("principals:\n"+
		"  alice: {workspaces: ["+w.alice+"], mode: workspace-write}\n"+
		"  bob: {workspaces: ["+w.bob+"], mode: workspace-write}\n"+
		"  carol: {workspaces: ["+w.carol+"], mode: read-only, widest-mode: workspace-write}\n"), 0o600))
	tokens := filepath.Join(base, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("# the test verifies its own tokens\n"), 0o600))
	// The configuration serve --listen --principals composes: the policy
	// knows every principal's workspaces (commands hide their secrets).
	cfg := config.Config{
		FS: "sandbox", Mode: mode, TempRoots: []string{w.temp},
		LogLevel: "error", LogFormat: "json", Exec: exec, AuditLog: filepath.Join(base, "audit.jsonl"),
		HTTP: config.HTTP{Listen: "127.0.0.1:0", TokenFile: tokens, Principals: pfile},
	}
	var principals *principal.Set
	opts, err := compose.Options(cfg, io.Discard,
		fx.Supply(mcpserver.Options{Version: "http"}),
		mcpserver.Module,
		fx.Populate(&w.srv, &w.tracker, &principals),
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
	hopts := mcpserver.HTTPOptions{
		Authenticate: auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true}),
		Principals:   principals, Mode: sandbox.Mode(mode), TempDir: w.temp,
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
	require.NoError(t, os.Symlink(w.bob, filepath.Join(w.alice, "to-bob")))
	require.NoError(t, os.Symlink(sub, filepath.Join(w.alice, "to-sub")))
	for _, tc := range []struct {
		name      string
		roots     []string
		writable  []string
		forbidden []string
	}{
		{"a root inside narrows", []string{sub}, []string{filepath.Join(sub, "in.txt")}, []string{filepath.Join(w.alice, "top.txt")}},
		{"a root outside does not widen", []string{w.bob}, []string{filepath.Join(w.alice, "top2.txt")}, []string{filepath.Join(w.bob, "x.txt")}},
		{"a prefix of another name is not inside", []string{w.alice + "2"}, []string{filepath.Join(w.alice, "top3.txt")}, []string{filepath.Join(w.alice+"2", "x.txt")}},
		{"a symlink in the workspace to another's is where it leads", []string{filepath.Join(w.alice, "to-bob")}, []string{filepath.Join(w.alice, "top4.txt")}, []string{filepath.Join(w.bob, "via-link.txt"), filepath.Join(w.alice, "to-bob", "via-link2.txt")}},
		{"a symlink in the workspace to a directory inside it narrows", []string{filepath.Join(w.alice, "to-sub")}, []string{filepath.Join(sub, "via-sub.txt")}, []string{filepath.Join(w.alice, "top5.txt")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}} //nolint:staticcheck // roots (SEP-2577) are served for 2025-11-25 clients
			client := mcp.NewClient(&mcp.Implementation{Name: "roots", Version: "v1"}, &mcp.ClientOptions{Capabilities: caps})
			for _, r := range tc.roots {
				client.AddRoots(&mcp.Root{URI: "file://" + r}) //nolint:staticcheck // roots (SEP-2577) are served for 2025-11-25 clients
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

// rawPost sends one initialize request with headers and returns the
// response, its body read and closed.
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
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
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
		{"a subject that is no principal", map[string]string{"Authorization": "Bearer dave-token"}, http.StatusForbidden},
		{"a foreign Origin", map[string]string{"Authorization": "Bearer alice-token", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"the null Origin", map[string]string{"Authorization": "Bearer alice-token", "Origin": "null"}, http.StatusForbidden},
		{"a rebinding Host", map[string]string{"Authorization": "Bearer alice-token", "Host": "attacker.example:80"}, http.StatusForbidden},
		{"a listed host on another port", map[string]string{"Authorization": "Bearer alice-token", "Host": "mcp.example.com:8443"}, http.StatusForbidden},
		{"a listed host:port", map[string]string{"Authorization": "Bearer alice-token", "Host": "mcp.example.com:443"}, http.StatusOK},
		{"an allowed Origin", map[string]string{"Authorization": "Bearer alice-token", "Origin": "https://app.example.com"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rawPost(t, w.url, tc.header) //nolint:bodyclose // rawPost closes it
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
	res := rawPost(t, w.url, map[string]string{"Authorization": "Bearer alice-token"}) //nolint:bodyclose // rawPost closes it
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "no new session while draining")
}

func TestHTTP_DrainWaitsForTheCallInFlight(t *testing.T) {
	w := newHTTPWorldExec(t, "sandbox", nil)
	alice := w.connect(t, "alice-token", nil)
	type out struct {
		text  string
		isErr bool
	}
	done := make(chan out, 1)
	go func() {
		res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "touch started; sleep 1; echo finished"}})
		if err != nil {
			done <- out{text: err.Error(), isErr: true}
			return
		}
		done <- out{text: res.Content[0].(*mcp.TextContent).Text, isErr: res.IsError}
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(w.alice, "started")); return err == nil }, 30*time.Second, 10*time.Millisecond)
	began := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	require.NoError(t, w.front.Drain(ctx))
	assert.GreaterOrEqual(t, time.Since(began), 900*time.Millisecond, "Drain waited for the command's second")
	select {
	case o := <-done:
		assert.False(t, o.isErr, o.text)
		assert.Contains(t, o.text, "finished", "the call in flight ran to its end and its answer reached the client")
	case <-time.After(10 * time.Second):
		t.Fatal("the drained call's answer never came")
	}
}

// TestHTTP_OnePrincipalsLongCommandsLeaveSlotsToOthers (issue 35): alice's
// four long commands (each waits for a file) take two of the server's four
// command slots, her share under serve --listen, and the other two wait;
// bob's echo runs at once beside them, and is answered while alice's still
// run. Once released, all four of alice's end with exit 0, each having run
// once.
func TestHTTP_OnePrincipalsLongCommandsLeaveSlotsToOthers(t *testing.T) {
	w := newHTTPWorldExec(t, "sandbox", nil)
	alice := w.connect(t, "alice-token", nil)
	bob := w.connect(t, "bob-token", nil)
	started := filepath.Join(w.alice, "started")
	type end struct {
		text string
		err  error
	}
	ends := make(chan end, 4)
	for range 4 {
		go func() {
			res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{
				"command": "echo alice >> started; while [ ! -e go ]; do sleep 0.02; done", "timeout_ms": 600000,
			}})
			e := end{err: err}
			if err == nil && len(res.Content) > 0 {
				e.text = res.Content[0].(*mcp.TextContent).Text
			}
			ends <- e
		}()
	}
	// About 2 s on a quiet machine; 30 s were passed under make test's
	// race detector at load 14.
	if !assert.Eventually(t, func() bool {
		b, _ := os.ReadFile(started)
		return string(b) == "alice\nalice\n"
	}, 3*time.Minute, 10*time.Millisecond, "two of alice's commands run") {
		b, _ := os.ReadFile(started)
		require.FailNow(t, "alice's commands started: "+strconv.Quote(string(b)))
	}
	text, code, isErr := call(t, bob, "exec", map[string]any{"command": "echo hi"})
	require.False(t, isErr, "%s: %s", code, text)
	assert.True(t, strings.HasPrefix(text, "exit code 0"), text)
	assert.Contains(t, text, "<stdout>\nhi\n</stdout>")
	b, err := os.ReadFile(started)
	require.NoError(t, err)
	assert.Equal(t, "alice\nalice\n", string(b), "alice's other two still wait for her share")

	require.NoError(t, os.WriteFile(filepath.Join(w.alice, "go"), nil, 0o644))
	for range 4 {
		e := <-ends
		require.NoError(t, e.err)
		assert.True(t, strings.HasPrefix(e.text, "exit code 0"), e.text)
	}
	b, err = os.ReadFile(started)
	require.NoError(t, err)
	assert.Equal(t, "alice\nalice\nalice\nalice\n", string(b))
}

func TestHTTP_AnIdleSessionEnds(t *testing.T) {
	w := newHTTPWorld(t, func(o *mcpserver.HTTPOptions) { o.SessionIdle = 300 * time.Millisecond })
	alice := w.connect(t, "alice-token", nil)
	_, _, isErr := call(t, alice, "list", map[string]any{"path": w.alice})
	require.False(t, isErr)
	require.Len(t, w.tracker.Sessions(), 1)
	assert.Eventually(t, func() bool { return len(w.tracker.Sessions()) == 0 }, 10*time.Second, 50*time.Millisecond,
		"the idle session and its harness session end")
}

func TestHTTP_NoFallbackToTheProcessDirectory(t *testing.T) {
	w := newHTTPWorldMode(t, "off", "workspace-write", func(o *mcpserver.HTTPOptions) {
		o.Authenticate, o.Principals = nil, nil
	})
	wd, err := os.Getwd()
	require.NoError(t, err)
	anon := w.connect(t, "", nil)
	target := filepath.Join(wd, "harness-http-fallback.txt")
	text, _, isErr := call(t, anon, "write", map[string]any{"file_path": "harness-http-fallback.txt", "content": "x"})
	assert.True(t, isErr, text)
	_, err = os.Stat(target)
	assert.True(t, os.IsNotExist(err), "nothing written in the process's working directory")
	text, _, isErr = call(t, anon, "write", map[string]any{"file_path": filepath.Join(w.temp, "t.txt"), "content": "x"})
	assert.False(t, isErr, "the mode is workspace-write: the temp root is writable (%s)", text)
}

func TestHTTP_TheAuditRecordNamesThePrincipal(t *testing.T) {
	w := newHTTPWorld(t, nil)
	alice := w.connect(t, "alice-token", nil)
	_, _, isErr := call(t, alice, "list", map[string]any{"path": w.alice})
	require.False(t, isErr)
	_, _, isErr = call(t, alice, "write", map[string]any{"file_path": filepath.Join(w.bob, "x"), "content": "x"})
	require.True(t, isErr)
	var lines []string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(w.base, "audit.jsonl"))
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(lines) >= 2
	}, 10*time.Second, 20*time.Millisecond)
	for _, l := range lines {
		assert.Contains(t, l, `"principal":"alice"`)
		assert.Contains(t, l, `"client":"http-test v1"`)
	}
	assert.Contains(t, lines[1], `"decision":"denied"`)
}

func TestHTTP_EscalationAsksOnTheSessionsStream(t *testing.T) {
	w := newHTTPWorld(t, nil)
	var asked atomic.Int64
	carol := w.connect(t, "carol-token", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}, nil
		},
	})
	target := filepath.Join(w.carol, "c.txt")
	text, _, isErr := call(t, carol, "write", map[string]any{"file_path": target, "content": "c\n"})
	require.True(t, isErr, "carol's sessions stand read-only")
	assert.Contains(t, text, "read-only")
	text, _, isErr = call(t, carol, "write", map[string]any{"file_path": target, "content": "c\n", "sandbox_permissions": "workspace-write", "justification": "write the file"})
	require.False(t, isErr, text)
	assert.EqualValues(t, 1, asked.Load(), "asked once, over HTTP")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "c\n", string(got))

	t.Run("beyond the principal's widest mode it is refused without asking", func(t *testing.T) {
		outside := filepath.Join(w.base, "outside.txt")
		for _, args := range []map[string]any{
			{"file_path": outside, "content": "x\n", "sandbox_permissions": "danger-full-access", "justification": "escape"},
			{"file_path": filepath.Join(w.alice, "x.txt"), "content": "x\n", "sandbox_permissions": "danger-full-access", "justification": "escape"},
		} {
			text, code, isErr := call(t, carol, "write", args)
			assert.True(t, isErr, text)
			assert.Equal(t, "SANDBOX_ESCALATION_REFUSED", code, text)
		}
		assert.EqualValues(t, 1, asked.Load(), "the user was not asked again")
		_, err := os.Stat(outside)
		assert.True(t, os.IsNotExist(err), "nothing written outside")
		_, err = os.Stat(filepath.Join(w.alice, "x.txt"))
		assert.True(t, os.IsNotExist(err), "nothing written in alice's workspace")
	})
}

func TestHTTP_AWiderServerModeIsClampedToThePrincipals(t *testing.T) {
	w := newHTTPWorldMode(t, "off", "danger-full-access", nil)
	alice := w.connect(t, "alice-token", nil)
	outside := filepath.Join(w.base, "outside.txt")
	text, _, isErr := call(t, alice, "write", map[string]any{"file_path": outside, "content": "x\n"})
	assert.True(t, isErr, "alice's widest mode is workspace-write on a danger-full-access server: %s", text)
	_, err := os.Stat(outside)
	assert.True(t, os.IsNotExist(err))
	bobs := filepath.Join(w.bob, "bob.txt")
	_, _, isErr = call(t, alice, "write", map[string]any{"file_path": bobs, "content": "x\n"})
	assert.True(t, isErr)
	got, _ := os.ReadFile(bobs)
	assert.Equal(t, "bob's own\n", string(got))
}

func TestHTTP_EachPrincipalSessionHasItsOwnTemp(t *testing.T) {
	w := newHTTPWorldExec(t, "sandbox", nil)
	alice := w.connect(t, "alice-token", nil)
	bob := w.connect(t, "bob-token", nil)
	text, _, isErr := call(t, alice, "exec", map[string]any{"command": "echo \"$TMPDIR\" && echo alice > \"$TMPDIR/a\""})
	require.False(t, isErr, text)
	_, out, _ := strings.Cut(text, "<stdout>\n")
	aliceTmp, _, _ := strings.Cut(out, "\n")
	require.True(t, strings.HasPrefix(aliceTmp, w.temp+"/harness-session-"), "alice's TMPDIR is her own: %q", text)
	got, err := os.ReadFile(filepath.Join(aliceTmp, "a"))
	require.NoError(t, err)
	assert.Equal(t, "alice\n", string(got))
	info, err := os.Stat(aliceTmp)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	text, _, isErr = call(t, bob, "exec", map[string]any{"command": "echo bob > " + aliceTmp + "/a"})
	assert.True(t, isErr, "bob's command cannot write alice's temp: %s", text)
	_, _, isErr = call(t, bob, "write", map[string]any{"file_path": filepath.Join(aliceTmp, "a"), "content": "bob\n"})
	assert.True(t, isErr, "nor can bob's file tools")
	_, _, isErr = call(t, bob, "write", map[string]any{"file_path": filepath.Join(w.temp, "shared"), "content": "bob\n"})
	assert.True(t, isErr, "the shared temp root is no principal's")
	got, err = os.ReadFile(filepath.Join(aliceTmp, "a"))
	require.NoError(t, err)
	assert.Equal(t, "alice\n", string(got), "alice's temp file unchanged on disk")

	require.NoError(t, alice.Close())
	assert.Eventually(t, func() bool { _, err := os.Stat(aliceTmp); return os.IsNotExist(err) }, 10*time.Second, 20*time.Millisecond,
		"the session's temp directory goes with it")
}

func TestHTTP_AnotherPrincipalsSecretsStayHiddenFromCommands(t *testing.T) {
	w := newHTTPWorldExec(t, "sandbox", nil)
	require.NoError(t, os.WriteFile(filepath.Join(w.bob, ".env"), []byte("SECRET=bob-db-password\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(w.bob, "svc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(w.bob, "svc", ".env.local"), []byte("SECRET=deeper\n"), 0o644))
	alice := w.connect(t, "alice-token", nil)
	for _, p := range []string{filepath.Join(w.bob, ".env"), filepath.Join(w.bob, "svc", ".env.local")} {
		text, _, _ := call(t, alice, "exec", map[string]any{"command": "cat " + p})
		assert.NotContains(t, text, "SECRET=", "alice's command does not read bob's %s", p)
		text, _, isErr := call(t, alice, "read", map[string]any{"file_path": p})
		assert.True(t, isErr, text)
		assert.NotContains(t, text, "SECRET=")
	}
	text, _, isErr := call(t, alice, "exec", map[string]any{"command": "cat " + filepath.Join(w.bob, "bob.txt")})
	assert.False(t, isErr, text)
	assert.Contains(t, text, "bob's own", "reading another's workspace is allowed: only the deny-read set is hidden")
}

func TestHTTP_APrincipalsLargeBodiesInFlightAreCapped(t *testing.T) {
	const limit = 1 << 20
	w := newHTTPWorld(t, func(o *mcpserver.HTTPOptions) { o.MaxRequestBytes = limit })
	post := func(token string, size int64) (*io.PipeWriter, chan int) {
		pr, pw := io.Pipe()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url, pr)
		require.NoError(t, err)
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		status := make(chan int, 1)
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				status <- 0
				return
			}
			_ = res.Body.Close()
			status <- res.StatusCode
		}()
		return pw, status
	}
	// Two bodies of the largest size, their bytes not sent yet, hold
	// alice's budget.
	a1, s1 := post("alice-token", limit)
	a2, s2 := post("alice-token", limit)
	time.Sleep(200 * time.Millisecond)
	u, err := url.Parse(w.url)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+u.Host+"\r\nAuthorization: Bearer alice-token\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: "+strconv.Itoa(limit/2)+"\r\n\r\n{")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err, "the third body was neither admitted nor refused")
	assert.Equal(t, "HTTP/1.1 429 Too Many Requests\r\n", status, "a third large body of alice's waits a second, then 429")
	b, sb := post("bob-token", limit/2)
	_ = b.CloseWithError(io.ErrUnexpectedEOF)
	code := <-sb
	assert.NotEqual(t, http.StatusTooManyRequests, code, "bob's budget is his own")
	_ = a1.CloseWithError(io.ErrUnexpectedEOF)
	_ = a2.CloseWithError(io.ErrUnexpectedEOF)
	<-s1
	<-s2
}

func TestHTTP_ATrickledBodyIsCutOff(t *testing.T) {
	w := newHTTPWorld(t, func(o *mcpserver.HTTPOptions) { o.BodyTimeout = 300 * time.Millisecond })
	u, err := url.Parse(w.url)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+u.Host+"\r\nAuthorization: Bearer alice-token\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, _ = io.Copy(io.Discard, conn) // until the server answers and closes
	assert.Less(t, time.Since(start), 10*time.Second, "a body stalled past its timeout no longer holds the connection")

	for _, auth := range []string{"", "Authorization: Bearer wrong\r\n"} {
		conn, err := net.Dial("tcp", u.Host)
		require.NoError(t, err)
		_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+u.Host+"\r\n"+auth+
			"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
		got, _ := io.ReadAll(conn)
		assert.Contains(t, string(got), "401 Unauthorized", "refused at once")
		assert.Less(t, time.Since(start), 10*time.Second, "a refused request's trickled body does not hold the connection (%q)", auth)
		_ = conn.Close()
	}

	t.Run("a call's answer still streams after its body arrived", func(t *testing.T) {
		alice := w.connect(t, "alice-token", nil)
		_, _, isErr := call(t, alice, "list", map[string]any{"path": w.alice})
		assert.False(t, isErr)
	})
}

func TestHTTP_CloseSessionsRemovesTheirTemp(t *testing.T) {
	w := newHTTPWorld(t, nil)
	alice := w.connect(t, "alice-token", nil)
	_, _, isErr := call(t, alice, "list", map[string]any{"path": w.alice})
	require.False(t, isErr)
	entries, err := os.ReadDir(w.temp)
	require.NoError(t, err)
	require.Len(t, entries, 1, "alice's session has its temp directory")
	require.NoError(t, os.WriteFile(filepath.Join(w.temp, entries[0].Name(), "left"), []byte("x"), 0o600))
	w.front.CloseSessions()
	entries, err = os.ReadDir(w.temp)
	require.NoError(t, err)
	assert.Empty(t, entries, "a stopping server leaves no session's temp behind")
	assert.Empty(t, w.tracker.Sessions(), "and ends every session")
}

// TestHTTP_MetricsBehindAuthentication (issue 39): /metrics on the HTTP
// front end needs what the MCP endpoint needs: a valid token of a
// configured principal; with one it serves the metrics.
func TestHTTP_MetricsBehindAuthentication(t *testing.T) {
	served := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("harness_sessions 0\n")) })
	w := newHTTPWorld(t, func(o *mcpserver.HTTPOptions) { o.Metrics = served })
	url := strings.TrimSuffix(w.url, mcpserver.EndpointPath) + mcpserver.MetricsPath
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a wrong token", "nobody-token", http.StatusUnauthorized},
		{"a token of no principal", "dave-token", http.StatusForbidden},
		{"a principal's token", "alice-token", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer func() { _ = res.Body.Close() }()
			body, _ := io.ReadAll(res.Body)
			assert.Equal(t, tc.status, res.StatusCode, string(body))
			if tc.status == http.StatusOK {
				assert.Equal(t, "harness_sessions 0\n", string(body))
			} else {
				assert.NotContains(t, string(body), "harness_sessions")
			}
		})
	}
}

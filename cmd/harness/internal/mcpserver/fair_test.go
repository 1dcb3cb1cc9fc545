package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/tool"
)

// gate is a tool whose calls say on started which principal made them, then
// wait for release or for their context to end.
type gate struct {
	started chan string
	release chan struct{}
}

func newGate() *gate { return &gate{started: make(chan string, 64), release: make(chan struct{})} }

func (g *gate) tool() *tool.Tool {
	return &tool.Tool{
		Name: "gate", Description: "waits until released", InputSchema: object(), OutputSchema: object(),
		Handler: func(ctx context.Context, call tool.Call) tool.Result {
			g.started <- call.Principal
			select {
			case <-g.release:
				return tool.Result{Text: "released", Value: map[string]any{}}
			case <-ctx.Done():
				return tool.ErrorResult("stopped", "FS_ABORTED")
			}
		},
	}
}

// gateWorld is a Server of gate and quick behind its HTTP front end, the
// bearer tokens of httpTokens authenticating alice, bob, carol and dave.
type gateWorld struct {
	srv *mcpserver.Server
	url string
}

func newGateWorld(t *testing.T, opts mcpserver.Options, hopts mcpserver.HTTPOptions, g *gate) *gateWorld {
	t.Helper()
	opts.Workspace = t.TempDir()
	srv, err := mcpserver.New(opts, []*tool.Tool{g.tool(), quick}, nil, nil)
	require.NoError(t, err)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if sub, ok := httpTokens[token]; ok {
			return &auth.TokenInfo{UserID: sub}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	hopts.Authenticate = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	hs := httptest.NewServer(srv.HTTPHandler(hopts))
	t.Cleanup(func() {
		close(g.release) // whatever still waits ends
		hs.Close()
	})
	return &gateWorld{srv: srv, url: hs.URL + mcpserver.EndpointPath}
}

func (w *gateWorld) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "fair-test", Version: "v1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: w.url, HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}},
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// outcome is one call's end: its code ("" for a success), text and
// retry-after hint (0 for none).
type outcome struct {
	who, code, text string
	retry           float64
}

// callAsync calls tool on cs in a goroutine and sends its outcome on out.
func callAsync(ctx context.Context, cs *mcp.ClientSession, who, name string, out chan<- outcome, wg *sync.WaitGroup) {
	wg.Go(func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			out <- outcome{who: who, code: "protocol: " + err.Error()}
			return
		}
		o := outcome{who: who}
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				o.text = tc.Text
			}
		}
		o.code, _ = res.Meta[mcpserver.CodeMetaKey].(string)
		o.retry, _ = res.Meta[mcpserver.RetryAfterMetaKey].(float64)
		out <- o
	})
}

// awaitWaiting returns once n calls of principal wait for a call slot.
func awaitWaiting(t *testing.T, srv *mcpserver.Server, principal string, n int) {
	t.Helper()
	deadline := time.Now().Add(pipeWait)
	for srv.Waiting(principal) != n {
		require.True(t, time.Now().Before(deadline), "%s: %d calls wait, want %d", principal, srv.Waiting(principal), n)
		runtime.Gosched()
	}
}

// TestHTTP_CallsAreServedRoundRobinBetweenPrincipals (issue 35): with one
// call slot, held by alice, and alice's three more calls waiting before
// bob's and carol's, the slot goes to alice, bob, carol, then alice twice:
// a principal with many calls waiting does not make the others wait for all
// of them. Every call succeeds; none is refused.
func TestHTTP_CallsAreServedRoundRobinBetweenPrincipals(t *testing.T) {
	g := newGate()
	w := newGateWorld(t, mcpserver.Options{MaxConcurrentCalls: 1}, mcpserver.HTTPOptions{}, g)
	sessions := map[string]*mcp.ClientSession{}
	for _, who := range []string{"alice", "bob", "carol"} {
		sessions[who] = w.connect(t, who+"-token")
	}
	out := make(chan outcome, 8)
	var wg sync.WaitGroup
	callAsync(t.Context(), sessions["alice"], "alice", "gate", out, &wg)
	require.Equal(t, "alice", <-g.started)
	for i := 1; i <= 3; i++ {
		callAsync(t.Context(), sessions["alice"], "alice", "gate", out, &wg)
		awaitWaiting(t, w.srv, "alice", i)
	}
	for _, who := range []string{"bob", "carol"} {
		callAsync(t.Context(), sessions[who], who, "gate", out, &wg)
		awaitWaiting(t, w.srv, who, 1)
	}
	var order []string
	for range 5 {
		g.release <- struct{}{}
		order = append(order, <-g.started)
	}
	g.release <- struct{}{}
	wg.Wait()
	close(out)
	assert.Equal(t, []string{"alice", "bob", "carol", "alice", "alice"}, order, "the order the waiting calls got the slot")
	n := 0
	for o := range out {
		assert.Empty(t, o.code, "%s: %s", o.who, o.text)
		n++
	}
	assert.Equal(t, 6, n, "every call was answered")
}

// TestHTTP_OnePrincipalsFloodWaitsBehindItsCap (issues 26, 35): with two
// call slots, one a principal, and six calls waiting at most (three a
// principal), alice's first call runs, her next three wait and her fifth is
// refused at once with SERVER_BUSY and a retry-after hint; bob's call takes
// the other slot at once and is answered while all of alice's still wait.
// Once released, alice's four calls succeed: 4 answered, 1 refused.
func TestHTTP_OnePrincipalsFloodWaitsBehindItsCap(t *testing.T) {
	g := newGate()
	w := newGateWorld(t, mcpserver.Options{MaxConcurrentCalls: 2, MaxWaitingCalls: 6}, mcpserver.HTTPOptions{PrincipalMaxCalls: 1}, g)
	alice, bob := w.connect(t, "alice-token"), w.connect(t, "bob-token")
	out := make(chan outcome, 8)
	var wg sync.WaitGroup
	callAsync(t.Context(), alice, "alice", "gate", out, &wg)
	require.Equal(t, "alice", <-g.started)
	for i := 1; i <= 3; i++ {
		callAsync(t.Context(), alice, "alice", "gate", out, &wg)
		awaitWaiting(t, w.srv, "alice", i)
	}
	callAsync(t.Context(), alice, "alice", "gate", out, &wg)
	busy := <-out
	assert.Equal(t, string(mcpserver.CodeServerBusy), busy.code, busy.text)
	assert.Contains(t, busy.text, "queue of waiting calls is full")
	assert.GreaterOrEqual(t, busy.retry, 1.0, "the refusal says how long to wait")

	text, code, isErr := call(t, bob, "quick", map[string]any{})
	assert.False(t, isErr, "%s %s", code, text)
	assert.Equal(t, "done", text, "bob is served while alice's calls wait")
	assert.Equal(t, 3, w.srv.Waiting("alice"), "alice's calls still wait")

	for i := range 4 {
		g.release <- struct{}{} // the running call; the next waiting one starts
		if i < 3 {
			assert.Equal(t, "alice", <-g.started)
		}
	}
	wg.Wait()
	close(out)
	answered := 0
	for o := range out {
		assert.Empty(t, o.code, o.text)
		assert.Equal(t, "released", o.text)
		answered++
	}
	assert.Equal(t, 4, answered, "alice's calls that waited all ran")
}

// TestHTTP_AWaitIsBoundedInTime (issue 35): a call that gets no slot within
// --call-wait is answered SERVER_BUSY, saying how long it waited and how
// long to wait; the slot's holder is untouched and finishes.
func TestHTTP_AWaitIsBoundedInTime(t *testing.T) {
	g := newGate()
	w := newGateWorld(t, mcpserver.Options{MaxConcurrentCalls: 1, CallWait: time.Millisecond}, mcpserver.HTTPOptions{}, g)
	alice, bob := w.connect(t, "alice-token"), w.connect(t, "bob-token")
	out := make(chan outcome, 2)
	var wg sync.WaitGroup
	callAsync(t.Context(), alice, "alice", "gate", out, &wg)
	require.Equal(t, "alice", <-g.started)
	text, code, isErr := call(t, bob, "quick", map[string]any{})
	assert.True(t, isErr)
	assert.Equal(t, string(mcpserver.CodeServerBusy), code)
	assert.True(t, strings.Contains(text, "no slot became free within") && strings.Contains(text, "retry after"), text)
	g.release <- struct{}{}
	wg.Wait()
	o := <-out
	assert.Empty(t, o.code)
	assert.Equal(t, "released", o.text)
}

// TestHTTP_APrincipalsSessionsAreCapped (issue 35): with
// --principal-max-sessions 2, alice's third session is refused at its
// first call with PRINCIPAL_SESSION_LIMIT naming the cap's flag, while
// bob's session is served; once one of alice's sessions ends, the third
// one's next call is served. The refused call leaves its audit record.
func TestHTTP_APrincipalsSessionsAreCapped(t *testing.T) {
	g := newGate()
	sink := &memorySink{}
	w := newGateWorld(t, mcpserver.Options{Sink: sink}, mcpserver.HTTPOptions{PrincipalMaxSessions: 2}, g)
	a1, a2, a3 := w.connect(t, "alice-token"), w.connect(t, "alice-token"), w.connect(t, "alice-token")
	for _, cs := range []*mcp.ClientSession{a1, a2} {
		text, code, isErr := call(t, cs, "quick", map[string]any{})
		require.False(t, isErr, "%s %s", code, text)
	}
	text, code, isErr := call(t, a3, "quick", map[string]any{})
	assert.True(t, isErr)
	assert.Equal(t, string(mcpserver.CodeSessionLimit), code)
	assert.Contains(t, text, `principal "alice" already has 2 sessions`)
	assert.Contains(t, text, "--principal-max-sessions")
	recs := sink.records()
	require.Len(t, recs, 1, "the refused call's record")
	assert.Equal(t, "alice", recs[0].Principal)
	assert.Equal(t, string(mcpserver.CodeSessionLimit), recs[0].Code)
	assert.Empty(t, recs[0].Session, "the refused session got none")

	text, code, isErr = call(t, w.connect(t, "bob-token"), "quick", map[string]any{})
	assert.False(t, isErr, "bob is not held to alice's sessions: %s %s", code, text)

	require.NoError(t, a1.Close())
	require.Eventually(t, func() bool {
		_, code, _ := call(t, a3, "quick", map[string]any{})
		return code == ""
	}, pipeWait, 10*time.Millisecond, "once one of alice's sessions ended, her third is served")
}

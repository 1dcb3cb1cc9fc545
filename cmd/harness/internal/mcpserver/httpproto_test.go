package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
)

// postJSON sends one JSON-RPC body to url with token, the session id sid
// ("" for none) and header; the caller closes the response.
func postJSON(t *testing.T, url, token, sid, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return res
}

// readAll returns a response's body and closes it.
func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	return string(b)
}

// openSession initializes a session of token over raw HTTP (declaring
// elicitation) and returns its id.
func openSession(t *testing.T, url, token string) string {
	t.Helper()
	res := postJSON(t, url, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	body := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	sid := res.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	res = postJSON(t, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, readAll(t, res))
	return sid
}

// sseMessage is one JSON-RPC message of an SSE stream.
type sseMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// TestHTTP_ACancelledRequestGetsNoResponse (issue 36): a call the client
// cancels (notifications/cancelled) gets no response on its stream, which
// still ends; a call that is not cancelled gets its response.
func TestHTTP_ACancelledRequestGetsNoResponse(t *testing.T) {
	w := newHTTPWorld(t, nil)
	for _, tc := range []struct {
		name     string
		cancel   bool
		response bool
	}{
		{"cancelled while it waits for the approval", true, false},
		{"answered: its response comes", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := openSession(t, w.url, "carol-token")
			// carol stands read-only: the write asks the user on the
			// call's stream and waits.
			res := postJSON(t, w.url, "carol-token", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{"file_path":"`+w.carol+`/c.txt","content":"c\n","sandbox_permissions":"workspace-write","justification":"write"}}}`, nil)
			defer func() { _ = res.Body.Close() }()
			require.Equal(t, http.StatusOK, res.StatusCode)
			require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			var msgs []sseMessage
			next := func() bool {
				for sc.Scan() {
					data, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok || data == "" {
						continue
					}
					var m sseMessage
					require.NoError(t, json.Unmarshal([]byte(data), &m), data)
					msgs = append(msgs, m)
					return true
				}
				return false
			}
			require.True(t, next(), "the approval's request arrives")
			require.Equal(t, "elicitation/create", msgs[0].Method)
			if tc.cancel {
				r := postJSON(t, w.url, "carol-token", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user stopped it"}}`, nil)
				assert.Equal(t, http.StatusAccepted, r.StatusCode, readAll(t, r))
			} else {
				r := postJSON(t, w.url, "carol-token", sid, `{"jsonrpc":"2.0","id":`+string(msgs[0].ID)+`,"result":{"action":"decline"}}`, nil)
				assert.Equal(t, http.StatusAccepted, r.StatusCode, readAll(t, r))
			}
			for next() {
			}
			require.NoError(t, sc.Err(), "the stream ends cleanly")
			var answered bool
			for _, m := range msgs[1:] {
				if string(m.ID) == "2" && (m.Result != nil || m.Error != nil) {
					answered = true
				}
			}
			assert.Equal(t, tc.response, answered, "messages after the approval's request: %+v", msgs[1:])
			_, err := os.Stat(w.carol + "/c.txt")
			assert.True(t, os.IsNotExist(err), "nothing was written")
		})
	}
}

// TestHTTP_ARequestWithoutASessionIsRefused (issue 36): after initialize,
// a POST with no Mcp-Session-Id gets 400 and a JSON-RPC Invalid Request
// error naming the missing header; it opens no session.
func TestHTTP_ARequestWithoutASessionIsRefused(t *testing.T) {
	w := newHTTPWorld(t, nil)
	openSession(t, w.url, "alice-token")
	for _, tc := range []struct {
		name, body, want string
	}{
		{
			"a call", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Bad Request: an Mcp-Session-Id header is required: send initialize first, then the session id it answers with on every request"}}`,
		},
		{
			"a string id", `{"jsonrpc":"2.0","id":"x","method":"ping"}`,
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"Bad Request: an Mcp-Session-Id header is required: send initialize first, then the session id it answers with on every request"}}`,
		},
		{
			"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: an Mcp-Session-Id header is required: send initialize first, then the session id it answers with on every request"}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := postJSON(t, w.url, "alice-token", "", tc.body, nil)
			body := readAll(t, res)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode)
			assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
			assert.Empty(t, res.Header.Get("Mcp-Session-Id"), "no session opened")
			assert.JSONEq(t, tc.want, body)
		})
	}
}

// TestHTTP_TheVersionErrorListsTheServedVersions (issue 36): an
// Mcp-Protocol-Version the front end does not speak is refused with the
// versions it does speak over HTTP: the 2025-11-25 era and earlier, not
// 2026-07-28 (a stateful front end answers that one with the SDK's
// fallback error).
func TestHTTP_TheVersionErrorListsTheServedVersions(t *testing.T) {
	w := newHTTPWorld(t, nil)
	sid := openSession(t, w.url, "alice-token")
	for _, tc := range []struct {
		name, sid string
	}{
		{"on a session", sid},
		{"initialize", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
			if tc.sid == "" {
				body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
			}
			res := postJSON(t, w.url, "alice-token", tc.sid, body, map[string]string{"Mcp-Protocol-Version": "2024-01-01"})
			got := readAll(t, res)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode)
			assert.Equal(t, "Bad Request: Unsupported protocol version (supported versions: 2025-11-25,2025-06-18,2025-03-26,2024-11-05)\n", got)
		})
	}
}

// TestHTTP_TheServersOwnOriginIsServed (issue 36, the conformance suite's
// LocalhostHostAccepted): a page from the listen address's own origin
// (a loopback name and the port bound) is served; other origins, another
// port's included, stay refused.
func TestHTTP_TheServersOwnOriginIsServed(t *testing.T) {
	w := newHTTPWorld(t, func(o *mcpserver.HTTPOptions) {
		o.AllowedOrigins = nil
	})
	u, err := url.Parse(w.url)
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, host, origin string
		status             int
	}{
		{"localhost", "localhost:" + port, "http://localhost:" + port, http.StatusOK},
		{"127.0.0.1", "127.0.0.1:" + port, "http://127.0.0.1:" + port, http.StatusOK},
		{"[::1]", "127.0.0.1:" + port, "http://[::1]:" + port, http.StatusOK},
		{"another port", "localhost:" + port, "http://localhost:1", http.StatusForbidden},
		{"another scheme", "localhost:" + port, "https://localhost:" + port, http.StatusForbidden},
		{"a foreign origin", "localhost:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"a rebinding Host with its own origin", "evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rawPost(t, w.url, map[string]string{"Authorization": "Bearer alice-token", "Host": tc.host, "Origin": tc.origin}) //nolint:bodyclose // rawPost closes it
			assert.Equal(t, tc.status, res.StatusCode)
			if tc.status == http.StatusOK {
				assert.Equal(t, tc.origin, res.Header.Get("Access-Control-Allow-Origin"))
			} else {
				assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
				assert.Empty(t, res.Header.Get("Mcp-Session-Id"))
			}
		})
	}
}

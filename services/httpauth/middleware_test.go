package httpauth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/httpauth"
)

const testMetadataURL = "https://harness.example/.well-known/oauth-protected-resource/mcp"

// fixedVerifier answers every token with info and err, for the cases a
// real verifier does not produce.
func fixedVerifier(info *auth.TokenInfo, err error) auth.TokenVerifier {
	return func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return info, err }
}

// seen records the TokenInfo the protected handler saw, or nil.
type seen struct {
	called bool
	info   *auth.TokenInfo
}

func (s *seen) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.called = true
		s.info = auth.TokenInfoFromContext(r.Context())
		_, _ = io.WriteString(w, "inside")
	})
}

func TestMiddleware(t *testing.T) {
	tf, err := httpauth.LoadTokenFile(writeTokenFile(t, "alice sha256:"+hashOf(aliceToken)+"\n", 0o600))
	require.NoError(t, err)
	const (
		challenge = `Bearer resource_metadata="` + testMetadataURL + `"`
		invalid   = `Bearer error="invalid_token", resource_metadata="` + testMetadataURL + `"`
	)
	tests := []struct {
		name          string
		verifier      auth.TokenVerifier
		authorization []string // header values; none when empty
		code          int
		challenge     string // the WWW-Authenticate header wanted; "" none
		body          string
		user          string // the UserID the handler sees on success
	}{
		{"no header", tf.Verify, nil, 401, challenge, "bearer token required", ""},
		{"basic scheme", tf.Verify, []string{"Basic YWxpY2U6c2VjcmV0"}, 401, challenge, "bearer token required", ""},
		{"bearer without a token", tf.Verify, []string{"Bearer"}, 401, challenge, "bearer token required", ""},
		{"bearer with two tokens", tf.Verify, []string{"Bearer " + aliceToken + " x"}, 401, challenge, "bearer token required", ""},
		{"token without a scheme", tf.Verify, []string{aliceToken}, 401, challenge, "bearer token required", ""},
		{"wrong token", tf.Verify, []string{"Bearer wrong"}, 401, invalid, "invalid token: unknown token", ""},
		{"good token", tf.Verify, []string{"Bearer " + aliceToken}, 200, "", "inside", "alice"},
		{"scheme in lower case", tf.Verify, []string{"bearer " + aliceToken}, 200, "", "inside", "alice"},
		{"two headers: neither counts", tf.Verify, []string{"Bearer " + aliceToken, "Bearer wrong"}, 401, challenge, "bearer token required", ""},
		{"two headers, the same good token: neither counts", tf.Verify, []string{"Bearer " + aliceToken, "Bearer " + aliceToken}, 401, challenge, "bearer token required", ""},
		{
			"expired TokenInfo", fixedVerifier(&auth.TokenInfo{UserID: "bob", Expiration: time.Now().Add(-time.Hour)}, nil),
			[]string{"Bearer x"},
			401, invalid, "invalid token: expired", "",
		},
		{
			"expired within the leeway", fixedVerifier(&auth.TokenInfo{UserID: "bob", Expiration: time.Now().Add(-10 * time.Second)}, nil),
			[]string{"Bearer x"},
			200, "", "inside", "bob",
		},
		{
			"foreign invalid-token error: text not echoed", fixedVerifier(nil, fmt.Errorf("%w: token x is bad", auth.ErrInvalidToken)),
			[]string{"Bearer x"},
			401, invalid, "invalid token", "",
		},
		{
			"foreign error: 500, text not echoed", fixedVerifier(nil, errors.New("database down for token x")),
			[]string{"Bearer x"},
			500, "", "token verification failed", "",
		},
		{"no TokenInfo and no error: 500", fixedVerifier(nil, nil), []string{"Bearer x"}, 500, "", "token verification failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seen
			h := httpauth.Middleware(tt.verifier, httpauth.MiddlewareOptions{
				ResourceMetadataURL: func(*http.Request) string { return testMetadataURL },
			})(s.handler())
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			for _, a := range tt.authorization {
				r.Header.Add("Authorization", a)
			}
			w := httptest.NewRecorder()

			h.ServeHTTP(w, r)

			assert.Equal(t, tt.code, w.Code)
			assert.Equal(t, tt.body, strings.TrimSpace(w.Body.String()))
			assert.Equal(t, tt.challenge, w.Header().Get("WWW-Authenticate"))
			if tt.user == "" {
				assert.False(t, s.called, "a refused request never reaches the handler")
				return
			}
			require.True(t, s.called)
			require.NotNil(t, s.info, "auth.TokenInfoFromContext sees the TokenInfo")
			assert.Equal(t, tt.user, s.info.UserID)
		})
	}
}

func TestMiddleware_ChallengeWithoutMetadataURL(t *testing.T) {
	tf, err := httpauth.LoadTokenFile(writeTokenFile(t, "alice sha256:"+hashOf(aliceToken)+"\n", 0o600))
	require.NoError(t, err)
	var s seen
	h := httpauth.Middleware(tf.Verify, httpauth.MiddlewareOptions{})(s.handler())
	tests := []struct {
		name          string
		authorization string
		challenge     string
	}{
		{"no token", "", "Bearer"},
		{"bad token", "Bearer nope", `Bearer error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
			if tt.authorization != "" {
				r.Header.Set("Authorization", tt.authorization)
			}
			w := httptest.NewRecorder()

			h.ServeHTTP(w, r)

			assert.Equal(t, http.StatusUnauthorized, w.Code)
			assert.Equal(t, tt.challenge, w.Header().Get("WWW-Authenticate"))
		})
	}
}

func TestMiddleware_MetadataURLPerRequest(t *testing.T) {
	tf, err := httpauth.LoadTokenFile(writeTokenFile(t, "alice sha256:"+hashOf(aliceToken)+"\n", 0o600))
	require.NoError(t, err)
	var s seen
	h := httpauth.Middleware(tf.Verify, httpauth.MiddlewareOptions{
		ResourceMetadataURL: func(r *http.Request) string {
			u, err := httpauth.MetadataURL("http://" + r.Host + "/mcp")
			require.NoError(t, err)
			return u
		},
	})(s.handler())
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8123/mcp", nil)
	w := httptest.NewRecorder()

	h.ServeHTTP(w, r)

	assert.Equal(t, `Bearer resource_metadata="http://127.0.0.1:8123/.well-known/oauth-protected-resource/mcp"`,
		w.Header().Get("WWW-Authenticate"))
}

// TestMiddleware_SessionsBoundToSubject runs the go-sdk's streamable
// handler behind the middleware: the session a token opened is refused to
// another subject's token, and served to its own.
func TestMiddleware_SessionsBoundToSubject(t *testing.T) {
	tf, err := httpauth.LoadTokenFile(writeTokenFile(t,
		"alice sha256:"+hashOf(aliceToken)+"\nbob sha256:"+hashOf(bobToken)+"\n", 0o600))
	require.NoError(t, err)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(httpauth.Middleware(tf.Verify, httpauth.MiddlewareOptions{})(handler))
	t.Cleanup(srv.Close)

	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:             srv.URL,
		HTTPClient:           &http.Client{Transport: bearer{token: aliceToken}},
		DisableStandaloneSSE: true,
	}, nil)
	require.NoError(t, err, "alice's token opens a session")
	t.Cleanup(func() { _ = cs.Close() })
	require.NoError(t, cs.Ping(t.Context(), nil))

	ping := func(token string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL,
			strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, ping(bobToken), "bob cannot use alice's session")
	assert.Equal(t, http.StatusUnauthorized, ping("stolen-session-no-token"))
	assert.Equal(t, http.StatusOK, ping(aliceToken), "alice can")
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

package httpauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-go/harness/services/httpauth"
)

// secretWindow is the length of the pieces of a secret looked for: a
// token's tail or head written alone is caught too.
const secretWindow = 12

// pieces returns every substring of s of length n (s itself when shorter).
func pieces(s string, n int) []string {
	if len(s) <= n {
		return []string{s}
	}
	out := make([]string, 0, len(s)-n+1)
	for i := 0; i+n <= len(s); i++ {
		out = append(out, s[i:i+n])
	}
	return out
}

// TestNoTokenInLogsOrErrors presents good and bad tokens of both kinds
// through the middleware with every log level recorded, and checks that no
// token, no part of a JWT and no token hash appears in a log line, a log
// field, a response or an error.
func TestNoTokenInLogsOrErrors(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	k := newRSAKey(t, "rsa-1")
	stranger := newRSAKey(t, "not-in-jwks")
	jwks := newJWKSServer(t, k)
	jwtVerifier := newVerifier(t, jwks, log)
	tf, err := httpauth.LoadTokenFile(writeTokenFile(t, "alice sha256:"+hashOf(aliceToken)+"\n", 0o600))
	require.NoError(t, err)

	expired := goodClaims("alice")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	wrongIss := goodClaims("alice")
	wrongIss["iss"] = "https://evil.example"
	jwts := []string{
		sign(t, k, goodClaims("alice")),
		sign(t, k, expired),
		sign(t, k, wrongIss),
		sign(t, stranger, goodClaims("alice")),
		sign(t, k, goodClaims("alice")) + "x",
	}
	statics := []string{aliceToken, aliceToken[:40], "wrong-static-token-" + aliceToken[:8], "tok\nen"}

	var secrets []string // everything that must never be written anywhere
	for _, tok := range jwts {
		secrets = append(secrets, tok)
		secrets = append(secrets, strings.Split(tok, ".")[1:]...) // payload and signature
	}
	for _, tok := range statics {
		secrets = append(secrets, tok, hashOf(tok))
	}
	var written []string // everything written: bodies, headers, errors
	run := func(v func(*http.Request) (string, error), mw http.Handler, token string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		mw.ServeHTTP(w, r)
		written = append(written, w.Body.String(), fmt.Sprint(w.Header()))
		if _, err := v(r); err != nil {
			written = append(written, err.Error(), fmt.Sprintf("%+v", err))
		}
	}
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	opts := httpauth.MiddlewareOptions{Log: log, ResourceMetadataURL: func(*http.Request) string { return testMetadataURL }}
	jwtMW := httpauth.Middleware(jwtVerifier.Verify, opts)(ok)
	tfMW := httpauth.Middleware(tf.Verify, opts)(ok)
	for _, tok := range jwts {
		run(func(r *http.Request) (string, error) {
			info, err := jwtVerifier.Verify(r.Context(), tok, r)
			if err != nil {
				return "", err
			}
			return info.UserID, nil
		}, jwtMW, tok)
	}
	for _, tok := range statics {
		run(func(r *http.Request) (string, error) {
			info, err := tf.Verify(r.Context(), tok, r)
			if err != nil {
				return "", err
			}
			return info.UserID, nil
		}, tfMW, tok)
	}
	// A JWKS outage logs too.
	jwks.setDown(true)
	_ = newVerifier(t, jwks, log)
	run(func(r *http.Request) (string, error) {
		_, err := jwtVerifier.Verify(r.Context(), jwts[3], r)
		return "", err
	}, jwtMW, jwts[3])

	entries := logs.AllUntimed()
	require.GreaterOrEqual(t, len(entries), 8, "the refusals and the JWKS outage were logged")
	for _, e := range entries {
		written = append(written, e.Message, fmt.Sprint(e.ContextMap()))
	}
	for _, w := range written {
		for _, s := range secrets {
			for _, part := range pieces(s, secretWindow) {
				assert.NotContains(t, w, part)
			}
		}
		assert.NotContains(t, strings.ToLower(w), "authorization")
	}
}

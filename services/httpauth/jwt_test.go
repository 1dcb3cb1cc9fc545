package httpauth_test

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-go/harness/services/httpauth"
)

func TestJWTVerifier_Verify(t *testing.T) {
	rsaKey, ecKey, edKey := newRSAKey(t, "rsa-1"), newECKey(t, "ec-1"), newEdKey(t, "ed-1")
	encKey := newRSAKey(t, "enc-1")
	encKey.use = "enc"
	outsider := newRSAKey(t, "rsa-1") // same kid, a key the JWKS does not hold
	jwks := newJWKSServer(t, rsaKey, ecKey, edKey, encKey)
	secret := []byte("a symmetric key published by mistake")
	jwks.addSecret("hs-1", secret)
	v := newVerifier(t, jwks, nil)

	pssKey := rsaKey
	pssKey.method = jwt.SigningMethodPS256
	noKID := func(k signingKey, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(k.method, c)
		s, err := tok.SignedString(k.priv)
		require.NoError(t, err)
		return s
	}
	with := func(key string, val any) jwt.MapClaims {
		c := goodClaims("alice")
		if val == nil {
			delete(c, key)
		} else {
			c[key] = val
		}
		return c
	}
	now := time.Now()
	pubDER, err := x509.MarshalPKIXPublicKey(rsaKey.priv.(*rsa.PrivateKey).Public())
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hsConfusion := jwt.NewWithClaims(jwt.SigningMethodHS256, goodClaims("alice"))
	hsConfusion.Header["kid"] = rsaKey.kid
	hsToken, err := hsConfusion.SignedString(pubPEM)
	require.NoError(t, err)
	hsPublished := jwt.NewWithClaims(jwt.SigningMethodHS256, goodClaims("alice"))
	hsPublished.Header["kid"] = "hs-1"
	hsPublishedToken, err := hsPublished.SignedString(secret)
	require.NoError(t, err)
	noneTok := jwt.NewWithClaims(jwt.SigningMethodNone, goodClaims("alice"))
	noneTok.Header["kid"] = rsaKey.kid
	noneToken, err := noneTok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)

	tests := []struct {
		name   string
		token  string
		reason string // "" when accepted (as alice)
	}{
		{"RS256 valid", sign(t, rsaKey, goodClaims("alice")), ""},
		{"PS256 valid", sign(t, pssKey, goodClaims("alice")), ""},
		{"ES256 valid", sign(t, ecKey, goodClaims("alice")), ""},
		{"EdDSA valid, key without use", sign(t, edKey, goodClaims("alice")), ""},
		{"no kid: checked against every key", noKID(ecKey, goodClaims("alice")), ""},
		{"audience among several", sign(t, rsaKey, with("aud", []string{"other", testAudience})), ""},
		{"expired within the leeway", sign(t, rsaKey, with("exp", now.Add(-10*time.Second).Unix())), ""},
		{"not before within the leeway", sign(t, rsaKey, with("nbf", now.Add(10*time.Second).Unix())), ""},
		{"wrong issuer", sign(t, rsaKey, with("iss", "https://evil.example")), "wrong issuer"},
		{"no issuer", sign(t, rsaKey, with("iss", nil)), "a required claim (iss, aud, exp) is missing"},
		{"wrong audience", sign(t, rsaKey, with("aud", "https://other.example/mcp")), "wrong audience"},
		{"no audience", sign(t, rsaKey, with("aud", nil)), "a required claim (iss, aud, exp) is missing"},
		{"expired", sign(t, rsaKey, with("exp", now.Add(-2*time.Minute).Unix())), "expired"},
		{"no exp", sign(t, rsaKey, with("exp", nil)), "a required claim (iss, aud, exp) is missing"},
		{"not yet valid", sign(t, rsaKey, with("nbf", now.Add(2*time.Minute).Unix())), "not valid yet"},
		{"issued in the future", sign(t, rsaKey, with("iat", now.Add(2*time.Minute).Unix())), "issued in the future"},
		{"no sub", sign(t, rsaKey, with("sub", nil)), "no subject"},
		{"empty sub", sign(t, rsaKey, with("sub", "")), "no subject"},
		{"alg none", noneToken, "bad signature or algorithm"},
		{"HS256 signed with the public key's bytes", hsToken, "bad signature or algorithm"},
		{"HS256 with a symmetric key the JWKS holds", hsPublishedToken, "bad signature or algorithm"},
		{"signed by a key the JWKS does not hold, same kid", sign(t, outsider, goodClaims("alice")), "bad signature or algorithm"},
		{"RS256 header on an EC key id", func() string {
			k := ecKey
			k.method = jwt.SigningMethodRS256
			k.priv = rsaKey.priv
			return sign(t, k, goodClaims("alice"))
		}(), "bad signature or algorithm"},
		{"key marked for encryption", sign(t, encKey, goodClaims("alice")), "no key to verify it"},
		{"tampered payload", func() string {
			parts := strings.Split(sign(t, rsaKey, goodClaims("alice")), ".")
			other := strings.Split(sign(t, rsaKey, goodClaims("mallory")), ".")
			return parts[0] + "." + other[1] + "." + parts[2]
		}(), "bad signature or algorithm"},
		{"not a JWT", "abc", "malformed"},
		{"empty", "", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := verify(t, v, tt.token)

			if tt.reason == "" {
				require.NoError(t, err)
				assert.Equal(t, "alice", sub)
				return
			}
			require.ErrorIs(t, err, auth.ErrInvalidToken)
			var e *httpauth.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, httpauth.CodeInvalidToken, e.Code)
			assert.Equal(t, "invalid token: "+tt.reason, err.Error())
		})
	}
}

func TestJWTVerifier_TokenInfo(t *testing.T) {
	k := newECKey(t, "ec-1")
	v := newVerifier(t, newJWKSServer(t, k), nil)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	tests := []struct {
		name   string
		extra  jwt.MapClaims
		scopes []string
	}{
		{"scope, space-separated", jwt.MapClaims{"scope": "files:read  exec"}, []string{"files:read", "exec"}},
		{"scp as an array", jwt.MapClaims{"scp": []string{"a", "b"}}, []string{"a", "b"}},
		{"scp as a string", jwt.MapClaims{"scp": "a"}, []string{"a"}},
		{"scope wins over scp", jwt.MapClaims{"scope": "x", "scp": []string{"y"}}, []string{"x"}},
		{"no scopes", jwt.MapClaims{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := goodClaims("bob")
			c["exp"] = exp.Unix()
			for key, val := range tt.extra {
				c[key] = val
			}

			info, err := v.Verify(t.Context(), sign(t, k, c), nil)

			require.NoError(t, err)
			assert.Equal(t, "bob", info.UserID)
			assert.True(t, exp.Equal(info.Expiration), "expiration %v", info.Expiration)
			assert.Equal(t, tt.scopes, info.Scopes)
		})
	}
}

func TestJWTVerifier_KeyRotation(t *testing.T) {
	oldKey, newKey := newRSAKey(t, "2026-11"), newEdKey(t, "2026-12")
	jwks := newJWKSServer(t, oldKey)
	v := newVerifier(t, jwks, nil)
	_, err := verify(t, v, sign(t, oldKey, goodClaims("alice")))
	require.NoError(t, err)
	require.Equal(t, int32(1), jwks.fetches.Load(), "one fetch at start")

	// The issuer publishes the new key and retires the old one.
	jwks.setKeys(newKey)
	sub, err := verify(t, v, sign(t, newKey, goodClaims("alice")))

	require.NoError(t, err, "an unknown kid fetches the JWKS again")
	assert.Equal(t, "alice", sub)
	assert.Equal(t, int32(2), jwks.fetches.Load())
	_, err = verify(t, v, sign(t, oldKey, goodClaims("alice")))
	require.ErrorIs(t, err, auth.ErrInvalidToken, "a key gone from the JWKS is forgotten")
	assert.Equal(t, "invalid token: no key to verify it", err.Error())
}

func TestJWTVerifier_UnknownKIDFetchesAreRateLimited(t *testing.T) {
	k := newRSAKey(t, "known")
	jwks := newJWKSServer(t, k)
	v := newVerifier(t, jwks, nil)
	stranger := newRSAKey(t, "made-up-1")

	_, err := verify(t, v, sign(t, stranger, goodClaims("alice")))
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	assert.Equal(t, int32(2), jwks.fetches.Load(), "the first unknown kid fetches again")

	for i := range 20 {
		stranger.kid = "made-up-" + string(rune('a'+i))
		start := time.Now()
		_, err := verify(t, v, sign(t, stranger, goodClaims("alice")))
		require.ErrorIs(t, err, auth.ErrInvalidToken)
		assert.Less(t, time.Since(start), 2*time.Second, "a rate-limited lookup does not wait for the next allowed fetch")
	}
	assert.Equal(t, int32(2), jwks.fetches.Load(), "made-up key ids do not hammer the JWKS")
	_, err = verify(t, v, sign(t, k, goodClaims("alice")))
	require.NoError(t, err, "known keys still work")
}

func TestJWTVerifier_JWKSDownAtStart(t *testing.T) {
	k := newECKey(t, "ec-1")
	jwks := newJWKSServer(t, k)
	jwks.setDown(true)
	core, logs := observer.New(zapcore.DebugLevel)

	v := newVerifier(t, jwks, zap.New(core))

	warnings := logs.FilterMessageSnippet("cannot fetch the JWKS").AllUntimed()
	require.Len(t, warnings, 1, "the start goes on, with one warning")
	assert.Equal(t, zapcore.WarnLevel, warnings[0].Level)
	assert.Equal(t, jwks.url(), warnings[0].ContextMap()["url"])
	token := sign(t, k, goodClaims("alice"))
	_, err := verify(t, v, token)
	require.ErrorIs(t, err, auth.ErrInvalidToken, "no keys yet: refused")
	assert.Equal(t, "invalid token: no key to verify it", err.Error())

	assert.Equal(t, int32(2), jwks.fetches.Load(), "the unknown kid tried the JWKS again")
	assert.Len(t, logs.FilterMessageSnippet("cannot fetch the JWKS").AllUntimed(), 2, "each failed fetch is a warning")
}

func TestJWTVerifier_JWKSBackAfterStart(t *testing.T) {
	k := newECKey(t, "ec-1")
	jwks := newJWKSServer(t, k)
	jwks.setDown(true)
	v := newVerifier(t, jwks, nil)
	jwks.setDown(false)

	sub, err := verify(t, v, sign(t, k, goodClaims("alice")))

	require.NoError(t, err, "the first token with a kid fetches the JWKS that failed at start")
	assert.Equal(t, "alice", sub)
	assert.Equal(t, int32(2), jwks.fetches.Load())
}

func TestNewJWTVerifier_RefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts httpauth.JWTOptions
		want string
	}{
		{"no issuer", httpauth.JWTOptions{JWKSURL: "https://idp.example/jwks", Audience: testAudience}, "an issuer is required"},
		{"no audience", httpauth.JWTOptions{JWKSURL: "https://idp.example/jwks", Issuer: testIssuer}, "an audience is required"},
		{"no url", httpauth.JWTOptions{Issuer: testIssuer, Audience: testAudience}, "not an absolute URL"},
		{"relative url", httpauth.JWTOptions{JWKSURL: "/jwks", Issuer: testIssuer, Audience: testAudience}, "not an absolute URL"},
		{"plain http off loopback", httpauth.JWTOptions{JWKSURL: "http://idp.example/jwks", Issuer: testIssuer, Audience: testAudience}, "must be https"},
		{"other scheme", httpauth.JWTOptions{JWKSURL: "file:///etc/jwks", Issuer: testIssuer, Audience: testAudience}, "not an absolute URL"},
		{"ftp", httpauth.JWTOptions{JWKSURL: "ftp://idp.example/jwks", Issuer: testIssuer, Audience: testAudience}, "must be https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := httpauth.NewJWTVerifier(t.Context(), tt.opts)

			assert.Nil(t, v)
			var e *httpauth.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, httpauth.CodeConfigInvalid, e.Code)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

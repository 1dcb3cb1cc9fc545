package httpauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/httpauth"
)

const (
	testIssuer   = "https://issuer.example"
	testAudience = "https://harness.example/mcp"
)

// signingKey is a private key of the tests' JWKS, with its key id.
type signingKey struct {
	kid    string
	priv   crypto.Signer
	method jwt.SigningMethod
	use    jwkset.USE
}

func newRSAKey(t *testing.T, kid string) signingKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return signingKey{kid: kid, priv: k, method: jwt.SigningMethodRS256, use: jwkset.UseSig}
}

func newECKey(t *testing.T, kid string) signingKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return signingKey{kid: kid, priv: k, method: jwt.SigningMethodES256, use: jwkset.UseSig}
}

func newEdKey(t *testing.T, kid string) signingKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return signingKey{kid: kid, priv: k, method: jwt.SigningMethodEdDSA}
}

// jwksServer serves the public half of its keys as a JWKS, or 503 while
// down, and counts the fetches.
type jwksServer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []signingKey
	secrets map[string][]byte // symmetric keys by kid, which no JWKS should hold
	down    bool
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T, keys ...signingKey) *jwksServer {
	t.Helper()
	s := &jwksServer{t: t, keys: keys}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) serve(w http.ResponseWriter, r *http.Request) {
	s.fetches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	store := jwkset.NewMemoryStorage()
	for _, k := range s.keys {
		jwk, err := jwkset.NewJWKFromKey(k.priv.Public(), jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{KID: k.kid, USE: k.use},
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := store.KeyWrite(r.Context(), jwk); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	for kid, secret := range s.secrets {
		jwk, err := jwkset.NewJWKFromKey(secret, jwkset.JWKOptions{
			Marshal:  jwkset.JWKMarshalOptions{Private: true},
			Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig},
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := store.KeyWrite(r.Context(), jwk); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	// Private: true publishes the symmetric keys' secrets; the asymmetric
	// keys were stored public only.
	body, err := store.JSONWithOptions(r.Context(), jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (s *jwksServer) setKeys(keys ...signingKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

func (s *jwksServer) addSecret(kid string, secret []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets == nil {
		s.secrets = map[string][]byte{}
	}
	s.secrets[kid] = secret
}

func (s *jwksServer) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *jwksServer) url() string { return s.srv.URL + "/jwks.json" }

// newVerifier starts a verifier on s, ended with the test.
func newVerifier(t *testing.T, s *jwksServer, log *zap.Logger) *httpauth.JWTVerifier {
	t.Helper()
	v, err := httpauth.NewJWTVerifier(t.Context(), httpauth.JWTOptions{
		JWKSURL: s.url(), Issuer: testIssuer, Audience: testAudience, Log: log,
	})
	require.NoError(t, err)
	return v
}

// goodClaims are claims every check accepts, for sub.
func goodClaims(sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": testIssuer,
		"aud": testAudience,
		"sub": sub,
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

// sign signs claims with k (its method, its kid in the header).
func sign(t *testing.T, k signingKey, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.method, claims)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	require.NoError(t, err)
	return s
}

// verify runs v with a request context bounded well below the test's.
func verify(t *testing.T, v *httpauth.JWTVerifier, token string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	info, err := v.Verify(ctx, token, nil)
	if err != nil {
		return "", err
	}
	return info.UserID, nil
}

package httpauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// The JWT verifier's limits.
const (
	// Leeway is the clock skew allowed on a JWT's exp, nbf and iat, and on
	// every Expiration Middleware checks: an issuer's clock a little ahead
	// or behind is not a refusal.
	Leeway = 30 * time.Second
	// jwksTimeout bounds one fetch of the JWKS, and a request's wait for a
	// refresh when its key id is unknown.
	jwksTimeout = 10 * time.Second
	// jwksRefreshInterval is how often the JWKS is fetched again (a revoked
	// key is dropped, a new one learnt, a failed first fetch retried).
	jwksRefreshInterval = 5 * time.Minute
	// unknownKIDInterval rate-limits the fetch a token with an unknown key
	// id triggers: tokens made up by a client cannot make the server hammer
	// the JWKS (one such fetch a minute at most).
	unknownKIDInterval = time.Minute
)

// jwtAlgorithms are the signature algorithms a JWT may use: asymmetric
// only. `none` and HS* are refused whatever the JWKS holds (an HS256 token
// "signed" with a public key's bytes is the algorithm-confusion attack).
var jwtAlgorithms = []string{
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA",
}

// JWTOptions configures NewJWTVerifier.
type JWTOptions struct {
	// JWKSURL is the authorization server's JSON Web Key Set: an absolute
	// https URL, or http on a loopback host. Required.
	JWKSURL string
	// Issuer is the exact `iss` every token must carry. Required.
	Issuer string
	// Audience must be one of a token's `aud` values (this resource
	// server's identifier, often the public URL of /mcp). Required.
	Audience string
	// HTTPClient fetches the JWKS; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Log gets a warning, with the URL and the cause, whenever a fetch of
	// the JWKS fails; nil logs nothing.
	Log *zap.Logger
}

// JWTVerifier checks JWT bearer tokens against a JWKS, as an OAuth 2.1
// resource server does. It is safe for concurrent use.
type JWTVerifier struct {
	keys   keyfunc.Keyfunc
	parser *jwt.Parser
}

// NewJWTVerifier fetches the JWKS at opts.JWKSURL and returns a verifier
// that keeps it fresh until ctx ends: every 5 minutes, and at most once a
// minute when a token names a key id it does not hold (a rotated key is
// accepted as soon as the JWKS lists it). The first fetch waits at most
// 10 s.
//
// A JWKS that cannot be fetched does not stop the start: the failure is
// logged as a warning and the fetch retried as above; meanwhile every
// token is refused (401), and a token with a key id fetches again (so
// service resumes within about a minute of the JWKS coming back).
//
// It returns an *Error with CodeConfigInvalid when an option is missing or
// the URL is not https (http only on loopback).
func NewJWTVerifier(ctx context.Context, opts JWTOptions) (*JWTVerifier, error) {
	if err := checkJWTOptions(opts); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	k, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{opts.JWKSURL}, keyfunc.Override{
		Client:           opts.HTTPClient,
		HTTPTimeout:      jwksTimeout,
		RateLimitWaitMax: jwksTimeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				log.Warn("httpauth: cannot fetch the JWKS; tokens are refused until a fetch succeeds",
					zap.String("url", u), zap.Error(err))
			}
		},
		RefreshInterval:   jwksRefreshInterval,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(unknownKIDInterval), 1),
	})
	if err != nil {
		return nil, newErr(CodeConfigInvalid, err, "jwks url %s", opts.JWKSURL)
	}
	// Only signing keys: a key marked for encryption ("use": "enc") is not
	// one a token may be signed with. A key without "use" is allowed.
	keys, err := keyfunc.New(keyfunc.Options{
		Ctx:          ctx,
		Storage:      k.Storage(),
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		return nil, newErr(CodeConfigInvalid, err, "jwks url %s", opts.JWKSURL)
	}
	return &JWTVerifier{
		keys: keys,
		parser: jwt.NewParser(
			jwt.WithValidMethods(jwtAlgorithms),
			jwt.WithIssuer(opts.Issuer),
			jwt.WithAudience(opts.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(Leeway),
		),
	}, nil
}

func checkJWTOptions(opts JWTOptions) error {
	if opts.Issuer == "" {
		return newErr(CodeConfigInvalid, nil, "jwt: an issuer is required (--jwt-issuer)")
	}
	if opts.Audience == "" {
		return newErr(CodeConfigInvalid, nil, "jwt: an audience is required (--jwt-audience)")
	}
	u, err := url.Parse(opts.JWKSURL)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return newErr(CodeConfigInvalid, nil, "jwks url %q: not an absolute URL", opts.JWKSURL)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
	default:
		// Fail closed: keys fetched in clear could be swapped on the wire.
		return newErr(CodeConfigInvalid, nil, "jwks url %s: must be https (http only on a loopback host)", opts.JWKSURL)
	}
	return nil
}

// isLoopbackHost reports whether host is "localhost" or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// claims are the parts of a JWT the verifier reads.
type claims struct {
	jwt.RegisteredClaims
	// Scope is RFC 8693's space-separated list.
	Scope string `json:"scope,omitempty"`
	// Scp is the list some issuers use instead (a string or an array).
	Scp jwt.ClaimStrings `json:"scp,omitempty"`
}

// Verify is an auth.TokenVerifier: the token's signature is checked
// against the JWKS (RS*, PS*, ES*, EdDSA only), `iss` must equal the
// issuer, `aud` contain the audience, `exp` be present and `exp`, `nbf` and
// `iat` hold within Leeway, and `sub` be present and not empty. It returns
// TokenInfo{UserID: sub, Expiration: exp, Scopes: "scope" split on spaces,
// or "scp"}, or an *Error with CodeInvalidToken wrapping
// auth.ErrInvalidToken whose message gives a short reason and never text
// from the token. ctx bounds the wait for a JWKS refresh.
func (v *JWTVerifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	var c claims
	if _, err := v.parser.ParseWithClaims(token, &c, v.keys.KeyfuncCtx(ctx)); err != nil {
		return nil, invalidToken(jwtReason(err))
	}
	if c.Subject == "" {
		return nil, invalidToken("no subject")
	}
	info := &auth.TokenInfo{UserID: c.Subject, Expiration: c.ExpiresAt.Time}
	if c.Scope != "" {
		info.Scopes = strings.Fields(c.Scope)
	} else if len(c.Scp) > 0 {
		info.Scopes = []string(c.Scp)
	}
	return info, nil
}

// jwtReason names why a token failed, in words fixed here: the library's
// own messages may quote the token's header (its key id, its algorithm).
func jwtReason(err error) string {
	reasons := []struct {
		err    error
		reason string
	}{
		{jwt.ErrTokenMalformed, "malformed"},
		{jwt.ErrTokenSignatureInvalid, "bad signature or algorithm"},
		{jwt.ErrTokenUnverifiable, "no key to verify it"},
		{jwt.ErrTokenExpired, "expired"},
		{jwt.ErrTokenNotValidYet, "not valid yet"},
		{jwt.ErrTokenUsedBeforeIssued, "issued in the future"},
		{jwt.ErrTokenInvalidIssuer, "wrong issuer"},
		{jwt.ErrTokenInvalidAudience, "wrong audience"},
		{jwt.ErrTokenRequiredClaimMissing, "a required claim (iss, aud, exp) is missing"},
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "not verified"
}

// A compile-time check that Verify is a token verifier.
var _ auth.TokenVerifier = (*JWTVerifier)(nil).Verify

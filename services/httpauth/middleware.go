package httpauth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/zap"
)

// MiddlewareOptions configures Middleware.
type MiddlewareOptions struct {
	// ResourceMetadataURL returns the absolute URL of the protected-resource
	// metadata for r (see MetadataURL), sent in every 401's
	// WWW-Authenticate; nil or "" sends the challenge without it.
	ResourceMetadataURL func(r *http.Request) string
	// Log gets one line per refused request (the reason and the remote
	// address, never the token or the Authorization header); nil logs
	// nothing.
	Log *zap.Logger
}

// Middleware demands `Authorization: Bearer <token>` and checks the token
// with v. A request without one gets 401 with `WWW-Authenticate: Bearer
// resource_metadata="<url>"`; a token v refuses (auth.ErrInvalidToken), or
// whose TokenInfo expired more than Leeway ago, gets 401 with
// `WWW-Authenticate: Bearer error="invalid_token", resource_metadata="<url>"`
// and the reason in the body; any other error of v gets 500. A zero
// Expiration is a token that does not expire (the token file's).
//
// On success the request reaches next with the TokenInfo in its context,
// under the go-sdk's own key: auth.TokenInfoFromContext returns it, and the
// streamable handler binds the session to its UserID.
func Middleware(v auth.TokenVerifier, opts MiddlewareOptions) func(http.Handler) http.Handler {
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			metadataURL := ""
			if opts.ResourceMetadataURL != nil {
				metadataURL = opts.ResourceMetadataURL(r)
			}
			token, ok := bearerToken(r)
			if !ok {
				log.Debug("httpauth: no bearer token", zap.String("remote", r.RemoteAddr))
				refuse(w, metadataURL, false, http.StatusUnauthorized, "bearer token required")
				return
			}
			info, err := v(r.Context(), token, r)
			switch {
			case errors.Is(err, auth.ErrInvalidToken):
				log.Info("httpauth: token refused", zap.String("remote", r.RemoteAddr), zap.String("reason", refusalText(err)))
				refuse(w, metadataURL, true, http.StatusUnauthorized, refusalText(err))
				return
			case err != nil || info == nil:
				// A foreign verifier's error text is not known to be free of
				// the token: it is neither logged nor sent.
				log.Error("httpauth: token verification failed", zap.String("remote", r.RemoteAddr))
				http.Error(w, "token verification failed", http.StatusInternalServerError)
				return
			case !info.Expiration.IsZero() && info.Expiration.Add(Leeway).Before(time.Now()):
				log.Info("httpauth: token refused", zap.String("remote", r.RemoteAddr), zap.String("reason", "expired"))
				refuse(w, metadataURL, true, http.StatusUnauthorized, "invalid token: expired")
				return
			}
			withTokenInfo(next, info, metadataURL).ServeHTTP(w, r)
		})
	}
}

// withTokenInfo hands r to next with info in its context. The go-sdk's key
// for it is private and only auth.RequireBearerToken sets it, so the
// already verified info is passed through it: its verifier returns info,
// and its own expiry check gets a minute more slack than the one above so
// that it never disagrees with it a moment later.
func withTokenInfo(next http.Handler, info *auth.TokenInfo, metadataURL string) http.Handler {
	verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return info, nil }
	return auth.RequireBearerToken(verified, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    metadataURL,
		AllowMissingExpiration: true,
		ClockSkew:              Leeway + time.Minute,
	})(next)
}

// bearerToken returns the token of r's one Authorization header: the
// scheme `Bearer` (any case) and one token after it, the same rule as the
// go-sdk's so both read the same token; a request with two headers has
// none.
func bearerToken(r *http.Request) (string, bool) {
	if len(r.Header.Values("Authorization")) != 1 {
		// Two headers: which one a proxy or the SDK reads is anyone's
		// guess; neither is taken.
		return "", false
	}
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "Bearer") {
		return "", false
	}
	return fields[1], true
}

// refusalText is what a client and the log are told of a refused token:
// this package's own message (fixed words), or only "invalid token" for a
// foreign verifier's error, whose text is not known to be token-free.
func refusalText(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Msg
	}
	return "invalid token"
}

// refuse answers with code, a WWW-Authenticate challenge (RFC 6750 §3) and
// msg as the body.
func refuse(w http.ResponseWriter, metadataURL string, invalid bool, code int, msg string) {
	var params []string
	if invalid {
		params = append(params, `error="invalid_token"`)
	}
	if metadataURL != "" {
		params = append(params, `resource_metadata=`+quote(metadataURL))
	}
	challenge := "Bearer"
	if len(params) > 0 {
		challenge += " " + strings.Join(params, ", ")
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, msg, code)
}

// quote makes s an HTTP quoted-string (RFC 9110 §5.6.4).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

package httpauth

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// MetadataPath is where RFC 9728 puts a resource's metadata: this prefix,
// then the resource URL's path (`/.well-known/oauth-protected-resource/mcp`
// for `https://host/mcp`).
const MetadataPath = "/.well-known/oauth-protected-resource"

// resourceName is the metadata's human-readable name of the resource.
const resourceName = "harness"

// MetadataOptions configures MetadataHandler.
type MetadataOptions struct {
	// Resource returns the resource identifier for r: the absolute public
	// URL of /mcp (the configured one, or one derived from r's validated
	// Host). Required.
	Resource func(r *http.Request) string
	// AuthorizationServers are the issuer URLs of the authorization
	// servers whose tokens the resource accepts; may be empty (static
	// tokens only).
	AuthorizationServers []string
}

// MetadataHandler serves the protected-resource metadata document of RFC
// 9728 (JSON): `resource` (opts.Resource of the request),
// `authorization_servers`, `bearer_methods_supported: ["header"]` and
// `resource_name: "harness"`. GET only (405 otherwise; OPTIONS answers a
// CORS preflight), with `Access-Control-Allow-Origin: *`: the document is
// public, meant for clients to discover where to get a token.
func MetadataHandler(opts MetadataOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               opts.Resource(r),
			AuthorizationServers:   opts.AuthorizationServers,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           resourceName,
		}).ServeHTTP(w, r)
	})
}

// MetadataURL returns the URL of the metadata of the resource at the
// absolute URL resource: same scheme and host, path MetadataPath followed
// by the resource's path, no query or fragment
// (`https://h:8443/mcp` → `https://h:8443/.well-known/oauth-protected-resource/mcp`).
// It returns an *Error with CodeConfigInvalid when resource is not an
// absolute http or https URL.
func MetadataURL(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", newErr(CodeConfigInvalid, nil, "resource url %q: not an absolute http or https URL", resource)
	}
	m := url.URL{Scheme: u.Scheme, Host: u.Host, Path: MetadataPath + strings.TrimSuffix(u.Path, "/")}
	return m.String(), nil
}

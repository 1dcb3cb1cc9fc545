package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/httpauth"
)

// TestMetadataNamesTheAuthorizationServer (issue 36): with --jwks-url and
// --jwt-issuer, the protected-resource metadata names the issuer as the
// authorization server (a client needs one to sign in) unless
// --authorization-server names others.
func TestMetadataNamesTheAuthorizationServer(t *testing.T) {
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"keys":[]}`))
	}))
	t.Cleanup(jwks.Close)
	for _, tc := range []struct {
		name    string
		servers []string
		want    string
	}{
		{"the issuer by default", nil, `["https://issuer.example/"]`},
		{"the ones named", []string{"https://login.example/", "https://sso.example/"}, `["https://login.example/","https://sso.example/"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Config{HTTP: config.HTTP{
				JWKSURL: jwks.URL + "/jwks.json", JWTIssuer: "https://issuer.example/", JWTAudience: "harness",
				ResourceURL: "https://mcp.example/mcp", AuthorizationServers: tc.servers,
			}}
			opts, err := httpOptions(t.Context(), cfg, nil, zap.NewNop())
			require.NoError(t, err)
			require.NotNil(t, opts.Metadata)
			srv := httptest.NewServer(opts.Metadata)
			t.Cleanup(srv.Close)
			res, err := http.Get(srv.URL + httpauth.MetadataPath + "/mcp")
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
			assert.JSONEq(t, `{"resource":"https://mcp.example/mcp","authorization_servers":`+tc.want+`,"bearer_methods_supported":["header"],"resource_name":"harness"}`, string(body))
		})
	}
}

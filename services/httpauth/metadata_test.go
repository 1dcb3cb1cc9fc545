package httpauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/httpauth"
)

func TestMetadataHandler(t *testing.T) {
	h := httpauth.MetadataHandler(httpauth.MetadataOptions{
		Resource:             func(r *http.Request) string { return "http://" + r.Host + "/mcp" },
		AuthorizationServers: []string{"https://idp.example", "https://idp2.example"},
	})
	tests := []struct {
		name   string
		method string
		host   string
		code   int
		want   map[string]any // the document; nil when none
	}{
		{"GET, resource from the request", http.MethodGet, "127.0.0.1:8123", http.StatusOK, map[string]any{
			"resource":                 "http://127.0.0.1:8123/mcp",
			"authorization_servers":    []any{"https://idp.example", "https://idp2.example"},
			"bearer_methods_supported": []any{"header"},
			"resource_name":            "harness",
		}},
		{"another host, another resource", http.MethodGet, "localhost:9000", http.StatusOK, map[string]any{
			"resource":                 "http://localhost:9000/mcp",
			"authorization_servers":    []any{"https://idp.example", "https://idp2.example"},
			"bearer_methods_supported": []any{"header"},
			"resource_name":            "harness",
		}},
		{"CORS preflight", http.MethodOptions, "127.0.0.1:8123", http.StatusNoContent, nil},
		{"POST refused", http.MethodPost, "127.0.0.1:8123", http.StatusMethodNotAllowed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, httpauth.MetadataPath+"/mcp", nil)
			r.Host = tt.host
			w := httptest.NewRecorder()

			h.ServeHTTP(w, r)

			assert.Equal(t, tt.code, w.Code)
			if tt.want == nil {
				return
			}
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
			var got map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMetadataHandler_NoAuthorizationServers(t *testing.T) {
	h := httpauth.MetadataHandler(httpauth.MetadataOptions{
		Resource: func(*http.Request) string { return "https://harness.example/mcp" },
	})
	w := httptest.NewRecorder()

	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, httpauth.MetadataPath, nil))

	require.Equal(t, http.StatusOK, w.Code)
	var got map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
	assert.Equal(t, map[string]any{
		"resource":                 "https://harness.example/mcp",
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "harness",
	}, got)
}

func TestMetadataURL(t *testing.T) {
	tests := []struct {
		resource string
		want     string // "" when refused
	}{
		{"https://harness.example/mcp", "https://harness.example/.well-known/oauth-protected-resource/mcp"},
		{"http://127.0.0.1:8123/mcp", "http://127.0.0.1:8123/.well-known/oauth-protected-resource/mcp"},
		{"https://[::1]:8443/mcp/", "https://[::1]:8443/.well-known/oauth-protected-resource/mcp"},
		{"https://proxy.example/agents/mcp?x=1#f", "https://proxy.example/.well-known/oauth-protected-resource/agents/mcp"},
		{"https://harness.example", "https://harness.example/.well-known/oauth-protected-resource"},
		{"https://harness.example/", "https://harness.example/.well-known/oauth-protected-resource"},
		{"/mcp", ""},
		{"ftp://harness.example/mcp", ""},
		{"https:///mcp", ""},
		{"://bad", ""},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			got, err := httpauth.MetadataURL(tt.resource)

			if tt.want == "" {
				var e *httpauth.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, httpauth.CodeConfigInvalid, e.Code)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

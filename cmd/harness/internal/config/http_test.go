package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
)

func TestHTTPConfig(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("# none\n"), 0o600))
	principals := filepath.Join(dir, "principals.yaml")
	require.NoError(t, os.WriteFile(principals, []byte("principals: {}\n"), 0o600))

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			args   []string
			wantIn []string
		}{
			{"an HTTP flag without --listen", []string{"--token-file", tokens}, []string{"--token-file", "needs --listen"}},
			{"allowed-origin without --listen", []string{"--allowed-origin", "https://a.example"}, []string{"--allowed-origin", "needs --listen"}},
			{"no port", []string{"--listen", "127.0.0.1"}, []string{"--listen", "not host:port"}},
			{"a host name", []string{"--listen", "example.com:80"}, []string{"--listen", "not a name"}},
			{"every interface without auth", []string{"--listen", ":8080"}, []string{"--listen", "authentication is required"}},
			{"0.0.0.0 without auth", []string{"--listen", "0.0.0.0:8080"}, []string{"authentication is required"}},
			{"a public address without auth", []string{"--listen", "192.0.2.1:8080"}, []string{"authentication is required"}},
			{"both verifiers", []string{"--listen", ":1", "--token-file", tokens, "--jwks-url", "https://idp.example/jwks", "--jwt-issuer", "i", "--jwt-audience", "a"}, []string{"--token-file", "conflicts with --jwks-url"}},
			{"jwks without issuer", []string{"--listen", ":1", "--jwks-url", "https://idp.example/jwks"}, []string{"--jwks-url", "--jwt-issuer"}},
			{"jwks over plain http off loopback", []string{"--listen", ":1", "--jwks-url", "http://idp.example/jwks", "--jwt-issuer", "i", "--jwt-audience", "a"}, []string{"--jwks-url", "https"}},
			{"an issuer without jwks", []string{"--listen", "127.0.0.1:1", "--jwt-issuer", "i"}, []string{"--jwt-issuer", "needs --jwks-url"}},
			{"principals without auth", []string{"--listen", "127.0.0.1:1", "--principals", principals}, []string{"--principals", "needs --token-file"}},
			{"principals with --workspace", []string{"--listen", "127.0.0.1:1", "--token-file", tokens, "--principals", principals, "--workspace", dir}, []string{"--principals", "conflicts with --workspace"}},
			{"a missing token file", []string{"--listen", "127.0.0.1:1", "--token-file", filepath.Join(dir, "none")}, []string{"--token-file", "no such file"}},
			{"a cert without its key", []string{"--listen", "127.0.0.1:1", "--tls-cert", tokens}, []string{"--tls-cert", "--tls-key"}},
			{"an origin with a path", []string{"--listen", "127.0.0.1:1", "--allowed-origin", "https://a.example/x"}, []string{"--allowed-origin", "not an origin"}},
			{"an origin without scheme", []string{"--listen", "127.0.0.1:1", "--allowed-origin", "a.example"}, []string{"--allowed-origin", "not an origin"}},
			{"a host with a slash", []string{"--listen", "127.0.0.1:1", "--allowed-host", "a.example/x"}, []string{"--allowed-host"}},
			{"a negative cap", []string{"--listen", "127.0.0.1:1", "--principal-max-calls", "-1"}, []string{"--principal-max-calls", "negative"}},
			{"a negative session cap", []string{"--listen", "127.0.0.1:1", "--principal-max-sessions", "-1"}, []string{"--principal-max-sessions", "negative"}},
			{"a negative command cap", []string{"--listen", "127.0.0.1:1", "--principal-max-commands", "-2"}, []string{"--principal-max-commands", "negative"}},
			{"a negative background cap", []string{"--listen", "127.0.0.1:1", "--principal-max-background", "-1"}, []string{"--principal-max-background", "negative"}},
			{"a memory cap that is no size", []string{"--listen", "127.0.0.1:1", "--principal-exec-memory", "lots"}, []string{"--principal-exec-memory", "not a size"}},
			{"a process cap below -1", []string{"--listen", "127.0.0.1:1", "--principal-exec-pids", "-2"}, []string{"--principal-exec-pids", "-1 for none"}},
			{"a principal cap without --listen", []string{"--principal-max-sessions", "3"}, []string{"--principal-max-sessions", "needs --listen"}},
			{"an OTLP endpoint that is no URL", []string{"--otlp-endpoint", "collector:4318"}, []string{"--otlp-endpoint", "not the base URL of an OTLP/HTTP receiver"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := load(t, tc.args, nil)
				require.Error(t, err)
				for _, w := range tc.wantIn {
					assert.Contains(t, err.Error(), w)
				}
			})
		}
	})

	t.Run("OTLP export from the flag or the environment", func(t *testing.T) {
		cfg := mustLoad(t, nil, nil)
		assert.False(t, cfg.OTLP())
		assert.False(t, cfg.Metrics(), "no metrics kept over stdio without a consumer")
		cfg = mustLoad(t, []string{"--otlp-endpoint", "http://127.0.0.1:4318"}, nil)
		assert.True(t, cfg.OTLP())
		assert.True(t, cfg.Metrics(), "the export sends the metrics")
		cfg = mustLoad(t, nil, map[string]string{"HARNESS_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
		assert.Equal(t, "http://127.0.0.1:4318", cfg.OTLPEndpoint)
		cfg = mustLoad(t, nil, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
		assert.True(t, cfg.OTLP(), "a standard variable names the receiver")
		assert.Empty(t, cfg.OTLPEndpoint)
		cfg = mustLoad(t, []string{"--otlp-endpoint", "http://127.0.0.1:4318"}, map[string]string{"OTEL_SDK_DISABLED": "true"})
		assert.False(t, cfg.OTLP(), "OTEL_SDK_DISABLED=true turns it off")
	})

	t.Run("loopback needs no authentication", func(t *testing.T) {
		for _, l := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:8080", "127.0.0.2:1"} {
			cfg := mustLoad(t, []string{"--listen", l}, nil)
			assert.Equal(t, l, cfg.Listen)
			assert.True(t, config.ListenLoopback(l), l)
		}
		for _, l := range []string{":8080", "0.0.0.0:1", "[::]:1", "192.0.2.1:1", "nonsense"} {
			assert.False(t, config.ListenLoopback(l), l)
		}
	})

	t.Run("every layer sets the HTTP fields", func(t *testing.T) {
		file := writeYAML(t, "listen: 127.0.0.1:7000\nsession-idle: 5m\nallowed-origin: [HTTPS://App.Example.com]\nprincipal-max-calls: 3\n")
		cfg := mustLoad(t, []string{"--config", file}, nil)
		assert.Equal(t, "127.0.0.1:7000", cfg.Listen)
		assert.Equal(t, 5*time.Minute, cfg.SessionIdle)
		assert.Equal(t, []string{"https://app.example.com"}, cfg.AllowedOrigins, "an origin is compared lower-case")
		assert.Equal(t, 3, cfg.PrincipalMaxCalls)
		cfg = mustLoad(t, []string{"--config", file, "--principal-max-calls", "4"}, map[string]string{
			"HARNESS_SESSION_IDLE": "1m", "HARNESS_ALLOWED_HOST": "a.example, b.example:443", "HARNESS_TOKEN_FILE": tokens,
		})
		assert.Equal(t, time.Minute, cfg.SessionIdle)
		assert.Equal(t, []string{"a.example", "b.example:443"}, cfg.AllowedHosts)
		assert.Equal(t, tokens, cfg.TokenFile)
		assert.Equal(t, 4, cfg.PrincipalMaxCalls)
		_, err := load(t, []string{"--listen", "127.0.0.1:1"}, map[string]string{"HARNESS_SHUTDOWN_TIMEOUT": "soon"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "HARNESS_SHUTDOWN_TIMEOUT")
		_, err = load(t, []string{"--listen", "127.0.0.1:1"}, map[string]string{"HARNESS_PRINCIPAL_MAX_SESSIONS": "many"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "HARNESS_PRINCIPAL_MAX_SESSIONS")
	})

	t.Run("a principal's caps in all, every layer and the defaults", func(t *testing.T) {
		for _, tc := range []struct {
			name                           string
			args                           []string
			env                            map[string]string
			sessions, commands, background int
			memory, pids                   int64
		}{
			{name: "defaults", args: []string{"--listen", "127.0.0.1:1"}, sessions: 128, commands: 2, background: 16, memory: 16 << 30, pids: 4096},
			{
				name: "flags", args: []string{
					"--listen", "127.0.0.1:1", "--principal-max-sessions", "5", "--principal-max-commands", "3",
					"--principal-max-background", "4", "--principal-exec-memory", "1G", "--principal-exec-pids", "100",
				},
				sessions: 5, commands: 3, background: 4, memory: 1 << 30, pids: 100,
			},
			{
				name: "variables, none for no cap", args: []string{"--listen", "127.0.0.1:1"},
				env: map[string]string{
					"HARNESS_PRINCIPAL_MAX_SESSIONS": "7", "HARNESS_PRINCIPAL_MAX_COMMANDS": "1", "HARNESS_PRINCIPAL_MAX_BACKGROUND": "2",
					"HARNESS_PRINCIPAL_EXEC_MEMORY": "none", "HARNESS_PRINCIPAL_EXEC_PIDS": "-1",
				},
				sessions: 7, commands: 1, background: 2, memory: 0, pids: 0,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := mustLoad(t, tc.args, tc.env)
				sessions, commands, background, memory, pids := cfg.PrincipalCaps()
				assert.Equal(t, []any{tc.sessions, tc.commands, tc.background, tc.memory, tc.pids}, []any{sessions, commands, background, memory, pids})
			})
		}
	})
}

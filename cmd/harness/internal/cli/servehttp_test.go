package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
)

// TestServeHTTPAsRootNeedsATokenFile (issue 26): a root server on loopback
// without authentication would let every local user act as root through
// the tools: it does not start. An ordinary user's server starts (and
// warns), checked by the help examples' run as that user.
func TestServeHTTPAsRootNeedsATokenFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the refusal is a root server's; as an ordinary user the server starts")
	}
	l := newLayout(t)
	r := runCLI(t, []string{"serve", "--listen", "127.0.0.1:0", "--workspace", l.ws, "--audit-log", "off"}, "", false, nil)
	assert.NotEqualValues(t, cli.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--listen: serving HTTP as root without --token-file or --jwks-url would let every local user act as root")
	assert.NotContains(t, r.stderr, "listening on")
}

// TestServeHTTPChecksTheTLSPairFirst (issue 26): a key its group or others
// may read, or a certificate and key that do not load, stop the start
// before the server says it listens.
func TestServeHTTPChecksTheTLSPairFirst(t *testing.T) {
	l := newLayout(t)
	writeHTTPFixtures(t, l.base)
	tokens := filepath.Join(l.base, "tokens")
	cert, key := filepath.Join(l.base, "cert.pem"), filepath.Join(l.base, "key.pem")
	run := func() run {
		return runCLI(t, []string{
			"serve", "--listen", "127.0.0.1:0", "--workspace", l.ws, "--audit-log", "off", "--token-file", tokens,
			"--tls-cert", cert, "--tls-key", key,
		}, "", false, nil)
	}
	require.NoError(t, os.Chmod(key, 0o644))
	r := run()
	assert.NotEqualValues(t, cli.ExitOK, r.code)
	assert.Contains(t, r.stderr, "may be read by its group or others (mode 0644)")
	assert.NotContains(t, r.stderr, "listening on")

	require.NoError(t, os.Chmod(key, 0o600))
	require.NoError(t, os.WriteFile(key, []byte("not a key\n"), 0o600))
	r = run()
	assert.NotEqualValues(t, cli.ExitOK, r.code)
	assert.Contains(t, r.stderr, "--tls-cert: the certificate and key do not load")
	assert.NotContains(t, r.stderr, "listening on")
}

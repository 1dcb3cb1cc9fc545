package cli_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

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

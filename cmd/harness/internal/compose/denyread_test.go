package compose_test

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestDenyReadReachesThePolicy (issue 24): --deny-read and --allow-read
// reach the policy service's deny-read set, the one value both tool
// families and `harness policy` use; a bad pattern does not compose.
func TestDenyReadReachesThePolicy(t *testing.T) {
	d := newDirs(t)
	cfg := config.Default()
	cfg.Workspace = d.ws
	cfg.DenyRead = []string{"*.pem", d.outside + "/keys/"}
	cfg.AllowRead = []string{".env"}
	var pol *sandboxpolicy.Service
	opts, err := compose.Options(cfg, io.Discard, fx.Populate(&pol))
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	defer app.RequireStop()

	set := pol.DenyRead()
	tests := []struct {
		path  string
		isDir bool
		rule  string
	}{
		{d.ws + "/server.pem", false, "*.pem (--deny-read)"},
		{d.outside + "/keys/a", false, d.outside + "/keys/ (--deny-read)"},
		{d.ws + "/.env", false, ""},
		{d.ws + "/.env.local", false, ".env.* (default)"},
		{d.ws + "/main.go", false, ""},
	}
	for _, tt := range tests {
		rule, ok := set.Denied(tt.path, tt.isDir)
		assert.Equal(t, tt.rule != "", ok, tt.path)
		assert.Equal(t, tt.rule, rule, tt.path)
	}

	cfg.DenyRead = []string{"config/secrets.yaml"}
	opts, err = compose.Options(cfg, io.Discard)
	assert.Nil(t, opts)
	require.EqualError(t, err, `--deny-read: "config/secrets.yaml": a relative pattern with a slash is ambiguous: write /abs/path, ~/path, or **/dir/file for any depth`)
}

// TestPrivateFilesAreDenied (issue 26): the HTTP front end's token file,
// principals file, certificate and key are in the deny-read set wherever
// they lie, so no tool or command reads or changes them.
func TestPrivateFilesAreDenied(t *testing.T) {
	d := newDirs(t)
	cfg := config.Default()
	cfg.Workspace = d.ws
	cfg.Listen = "127.0.0.1:0"
	cfg.TokenFile, cfg.TLSCert, cfg.TLSKey = d.ws+"/tokens", d.outside+"/cert.pem", d.outside+"/key.pem"
	for _, p := range []string{cfg.TokenFile, cfg.TLSCert, cfg.TLSKey} {
		require.NoError(t, os.WriteFile(p, []byte("x\n"), 0o600))
	}
	var pol *sandboxpolicy.Service
	opts, err := compose.Options(cfg, io.Discard, fx.Populate(&pol))
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	defer app.RequireStop()
	for _, p := range []string{cfg.TokenFile, cfg.TLSCert, cfg.TLSKey} {
		_, denied := pol.DenyRead().Denied(p, false)
		assert.True(t, denied, p)
	}
	_, denied := pol.DenyRead().Denied(d.ws+"/tokens2", false)
	assert.False(t, denied, "only the files themselves")
}

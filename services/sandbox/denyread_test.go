package sandbox_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
)

func TestDenyReadDenied(t *testing.T) {
	d, err := sandbox.NewDenyRead(sandbox.DenyReadOptions{
		Patterns: []string{"*.pem", "/srv/secrets/", "**/private/key.txt", "!/home/u/.aws/config"},
		Homes:    []string{"/home/u", "/root"},
		Files:    []string{"/etc/harness.yaml"},
	})
	require.NoError(t, err)
	tests := []struct {
		path  string
		isDir bool
		rule  string
	}{
		{"/home/u/.ssh", true, "~/.ssh (default)"},
		{"/home/u/.ssh/id_ed25519", false, "~/.ssh (default)"},
		{"/root/.ssh/authorized_keys", false, "~/.ssh (default)"},
		{"/home/u/.sshx", false, ""},
		{"/home/u/.docker/config.json", false, "~/.docker/config.json (default)"},
		{"/home/u/.docker/other.json", false, ""},
		{"/home/u/.cargo/credentials.toml", false, "~/.cargo/credentials* (default)"},
		{"/home/u/.cargo/config.toml", false, ""},
		{"/home/u/.aws/config", false, "~/.aws (default)"}, // an exemption never re-allows beneath a denied directory
		{"/work/app/.env", false, ".env (default)"},
		{"/work/app/.env.local", false, ".env.* (default)"},
		{"/work/app/.env.example", false, ""},
		{"/work/app/.envrc", false, ""},
		{"/work/app/server.pem", false, "*.pem (--deny-read)"},
		{"/srv/secrets", true, "/srv/secrets/ (--deny-read)"},
		{"/srv/secrets", false, ""}, // a file of that name: the pattern is for directories
		{"/srv/secrets/a/b", false, "/srv/secrets/ (--deny-read)"},
		{"/a/b/private/key.txt", false, "**/private/key.txt (--deny-read)"},
		{"/etc/harness.yaml", false, "harness's own file /etc/harness.yaml"},
		{"/etc/harness.yaml.bak", false, ""},
		{"/home/u/.config/harness/x", false, "~/.config/harness (default)"},
		{"/", true, ""},
		{"relative/.ssh", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rule, ok := d.Denied(tt.path, tt.isDir)
			assert.Equal(t, tt.rule != "", ok)
			assert.Equal(t, tt.rule, rule)
		})
	}
}

// TestDenyReadAnchoredRules: each anchored pattern (a `~` one once per
// home, an absolute one, then the exact files) comes with the rule Denied
// names; exemptions and patterns at any depth are not among them; Anchored
// is the same patterns in the same order.
func TestDenyReadAnchoredRules(t *testing.T) {
	d, err := sandbox.NewDenyRead(sandbox.DenyReadOptions{
		Patterns: []string{"*.pem", "/srv/**/*.key", "/srv/secrets/", "!/home/u/.aws/config"},
		Homes:    []string{"/home/u", "/root"},
		Files:    []string{"/etc/harness.yaml"},
	})
	require.NoError(t, err)
	rules := d.AnchoredRules()
	assert.Contains(t, rules, sandbox.AnchoredPattern{Pattern: "/home/u/.ssh", Rule: "~/.ssh (default)"})
	assert.Contains(t, rules, sandbox.AnchoredPattern{Pattern: "/root/.ssh", Rule: "~/.ssh (default)"})
	assert.Contains(t, rules, sandbox.AnchoredPattern{Pattern: "/srv/**/*.key", Rule: "/srv/**/*.key (--deny-read)"})
	assert.Contains(t, rules, sandbox.AnchoredPattern{Pattern: "/srv/secrets", Rule: "/srv/secrets/ (--deny-read)"})
	assert.Equal(t, sandbox.AnchoredPattern{Pattern: "/etc/harness.yaml", Rule: "harness's own file /etc/harness.yaml"}, rules[len(rules)-1])
	patterns := make([]string, len(rules))
	for i, r := range rules {
		assert.NotContains(t, r.Pattern, "/home/u/.aws/config", "an exemption denies nothing")
		assert.NotEqual(t, "*.pem", r.Pattern, "a pattern at any depth is not anchored")
		patterns[i] = r.Pattern
	}
	assert.Equal(t, patterns, d.Anchored())
}

func TestDenyReadAllowAndErrors(t *testing.T) {
	d, err := sandbox.NewDenyRead(sandbox.DenyReadOptions{Allow: []string{"~/.npmrc", ".env"}, Homes: []string{"/home/u"}})
	require.NoError(t, err)
	_, ok := d.Denied("/home/u/.npmrc", false)
	assert.False(t, ok)
	_, ok = d.Denied("/w/.env", false)
	assert.False(t, ok)
	_, ok = d.Denied("/w/.env.production", false)
	assert.True(t, ok, ".env.* is a default of its own")
	assert.Contains(t, d.Anchored(), "/home/u/.ssh")
	assert.Contains(t, d.AnyDepth(), ".env.*")
	assert.NotContains(t, d.AnyDepth(), ".env")
	assert.Contains(t, d.Describe(), "~/.ssh (default; --allow-read ~/.ssh to allow)")
	homes := d.Homes()
	assert.Equal(t, []string{"/home/u"}, homes, "the homes ~ stands for")
	homes[0] = "/changed"
	assert.Equal(t, []string{"/home/u"}, d.Homes(), "Homes returns a copy")

	for _, bad := range []sandbox.DenyReadOptions{
		{Patterns: []string{" "}},
		{Patterns: []string{"#x"}},
		{Patterns: []string{"a/b"}},
		{Patterns: []string{"~bob/.ssh"}},
		{Patterns: []string{"[x"}},
		{Allow: []string{"~/.bashrc"}},
		{Allow: []string{"!.env.example"}},
		{Homes: []string{"home/u"}},
		{Files: []string{"x.yaml"}},
	} {
		_, err := sandbox.NewDenyRead(bad)
		assert.Error(t, err, "%+v", bad)
	}
	empty, err := sandbox.NewDenyRead(sandbox.DenyReadOptions{Allow: []string{}})
	require.NoError(t, err)
	assert.False(t, empty.Empty(), "the defaults at any depth deny without a home")
	var zero sandbox.DenyRead
	assert.True(t, zero.Empty())
}

// TestDenyReadDeniedEntry: for a path whose parent is not denied,
// DeniedEntry decides as Denied does, matching only the path itself.
func TestDenyReadDeniedEntry(t *testing.T) {
	d, err := sandbox.NewDenyRead(sandbox.DenyReadOptions{
		Patterns: []string{"*.pem", "/srv/secrets/"},
		Homes:    []string{"/home/u"},
		Files:    []string{"/etc/harness.yaml"},
	})
	require.NoError(t, err)
	tests := []struct {
		path  string
		isDir bool
		rule  string
	}{
		{"/home/u/.ssh", true, "~/.ssh (default)"},
		{"/home/u/notes.txt", false, ""},
		{"/w/app/.env", false, ".env (default)"},
		{"/w/app/.env.example", false, ""},
		{"/w/app/cert.pem", false, "*.pem (--deny-read)"},
		{"/srv/secrets", true, "/srv/secrets/ (--deny-read)"},
		{"/srv/secrets", false, ""},
		{"/etc/harness.yaml", false, "harness's own file /etc/harness.yaml"},
		{"relative/.env", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rule, ok := d.DeniedEntry(tc.path, tc.isDir)
			assert.Equal(t, tc.rule, rule)
			assert.Equal(t, tc.rule != "", ok)
			if filepath.IsAbs(tc.path) {
				want, _ := d.Denied(tc.path, tc.isDir)
				assert.Equal(t, want, rule, "as Denied decides when the parent is not denied")
			}
		})
	}
}

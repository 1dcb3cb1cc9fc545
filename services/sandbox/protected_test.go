package sandbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
)

func TestProtectedPaths(t *testing.T) {
	p, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{Patterns: []string{"*.pem", "secrets/", "/deploy/**", "!public.pem"}, VCS: sandbox.VCSReadOnly})
	require.NoError(t, err)
	tests := []struct {
		name  string
		rel   string
		isDir bool
		rule  string // "" when not protected
	}{
		{name: "the root itself is never protected", rel: ""},
		{name: "a plain file is not protected", rel: "src/main.go"},
		{name: ".git/config is protected", rel: ".git/config", rule: ".git"},
		{name: "a hook is protected", rel: ".git/hooks/pre-commit", rule: ".git"},
		{name: "a nested repository's .git is protected", rel: "vendor/lib/.git/HEAD", rule: ".git"},
		{name: "a .git file itself is protected", rel: "sub/.git", rule: ".git"},
		{name: "a .git directory not yet created is protected", rel: "new/.git", isDir: true, rule: ".git"},
		{name: ".hg is protected", rel: ".hg/hgrc", rule: ".hg"},
		{name: ".jj is protected", rel: "a/.jj/repo/store", rule: ".jj"},
		{name: ".svn is protected", rel: ".svn/wc.db", rule: ".svn"},
		{name: "a name that only starts with .git is not", rel: ".gitignore"},
		{name: ".github is not metadata", rel: ".github/workflows/ci.yml"},
		{name: "a pattern protects a file at any depth", rel: "a/b/key.pem", rule: "*.pem"},
		{name: "an exemption after the pattern lets a file through", rel: "public.pem"},
		{name: "a directory pattern protects what is beneath", rel: "secrets/x/y.txt", rule: "secrets/"},
		{name: "a directory pattern does not protect a file of that name", rel: "secrets"},
		{name: "an anchored pattern protects beneath the root", rel: "deploy/prod/env", rule: "/deploy/**"},
		{name: "an anchored pattern does not protect deeper", rel: "x/deploy/prod/env"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rule, ok := p.Protected(tc.rel, tc.isDir)
			assert.Equal(t, tc.rule != "", ok)
			assert.Equal(t, tc.rule, rule)
		})
	}
	t.Run("the zero value protects the metadata only", func(t *testing.T) {
		var zero sandbox.ProtectedPaths
		_, ok := zero.Protected(".git/config", false)
		assert.True(t, ok)
		_, ok = zero.Protected("key.pem", false)
		assert.False(t, ok)
	})
	t.Run("Describe lists the metadata, the host-run files, then the patterns", func(t *testing.T) {
		d := p.Describe()
		assert.Equal(t, []string{".git (at any depth, wholly: --vcs read-only)", ".hg (at any depth)", ".jj (at any depth)", ".svn (at any depth)"}, d[:4])
		assert.Len(t, d, 4+len(sandbox.HostRunFiles())+4)
		assert.Contains(t, d, ".vscode/ (host-run file, at any depth; --unprotect .vscode to allow)")
		assert.Equal(t, []string{"*.pem (--protect)", "secrets/ (--protect)", "/deploy/** (--protect)", "!public.pem (--protect)"}, d[len(d)-4:])
	})
}

func TestNewProtectedPathsRefuses(t *testing.T) {
	for _, bad := range []string{"", "  ", "#comment", "a\x00b", "[unclosed"} {
		_, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{Patterns: []string{"ok", bad}, VCS: sandbox.VCSReadOnly})
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "protected path pattern")
	}
}

// TestProtectedEntryAgreesWithProtected: for an entry whose ancestors are
// not protected, ProtectedEntry answers what Protected does.
func TestProtectedEntryAgreesWithProtected(t *testing.T) {
	p, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{Patterns: []string{"*.pem", "secrets/", "!keep.pem", "/deploy/**"}, VCS: sandbox.VCSReadOnly})
	require.NoError(t, err)
	for _, c := range []struct {
		rel   string
		isDir bool
	}{
		{".git", true},
		{".git", false},
		{"a/b/.hg", true},
		{"x/.jj", true},
		{"x/.svn", false},
		{"a/key.pem", false},
		{"keep.pem", false},
		{"secrets", true},
		{"secrets", false},
		{"deploy/x", false},
		{"src/main.go", false},
		{"gitx", true},
		{"a/.gitignore", false},
		{"", true},
		{".", true},
	} {
		_, want := p.Protected(c.rel, c.isDir)
		assert.Equal(t, want, p.ProtectedEntry(c.rel, c.isDir), "%q dir=%v", c.rel, c.isDir)
	}
	none, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{VCS: sandbox.VCSReadOnly})
	require.NoError(t, err)
	assert.True(t, none.ProtectedEntry("a/.git", true))
	assert.False(t, none.ProtectedEntry("a/b", true))
}

// TestProtectedExecutables (issue 35): harness's executables are exact
// protected paths, listed by Files after the configuration file and once
// by Describe (their paths vary by install); a relative one is refused.
func TestProtectedExecutables(t *testing.T) {
	p, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{ConfigFile: "/etc/h.yaml", Executables: []string{"/w/bin/harness", "/w/bin/../bin/harness", "/opt/harness"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"/etc/h.yaml", "/w/bin/harness", "/opt/harness"}, p.Files())
	assert.True(t, p.Executable("/w/bin/harness"))
	assert.False(t, p.Executable("/etc/h.yaml"))
	assert.False(t, p.ConfigFile("/w/bin/harness"))
	d := p.Describe()
	assert.Equal(t, "harness's own executable, where it lies inside a writable root (the file a client starts again)", d[len(d)-1])
	_, err = sandbox.NewProtectedPaths(sandbox.ProtectOptions{Executables: []string{"bin/harness"}})
	require.ErrorContains(t, err, "not an absolute path")
}

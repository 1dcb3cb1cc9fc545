package toolchaincache_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/toolchaincache"
)

func TestCandidates(t *testing.T) {
	home := func(extra ...toolchaincache.Cache) []toolchaincache.Cache {
		base := []toolchaincache.Cache{
			{Tool: "go modules", Path: "/h/go/pkg/mod"},
			{Tool: "go build", Path: "/h/.cache/go-build"},
			{Tool: "npm", Path: "/h/.npm"},
			{Tool: "pip", Path: "/h/.cache/pip"},
			{Tool: "uv", Path: "/h/.cache/uv"},
			{Tool: "cargo registry", Path: "/h/.cargo/registry"},
			{Tool: "cargo git", Path: "/h/.cargo/git"},
			{Tool: "maven", Path: "/h/.m2/repository"},
			{Tool: "gradle", Path: "/h/.gradle/caches"},
		}
		for _, e := range extra {
			for i := range base {
				if base[i].Tool == e.Tool {
					base[i].Path = e.Path
				}
			}
		}
		return base
	}
	for _, c := range []struct {
		name string
		env  []string
		want []toolchaincache.Cache
	}{
		{name: "defaults beneath HOME", env: []string{"PATH=/bin", "HOME=/h/"}, want: home()},
		{
			name: "each variable wins over its default",
			env: []string{
				"HOME=/h", "GOMODCACHE=/m", "GOCACHE=/gc", "npm_config_cache=/n", "PIP_CACHE_DIR=/p",
				"UV_CACHE_DIR=/u", "CARGO_HOME=/c", "GRADLE_USER_HOME=/g",
			},
			want: home(
				toolchaincache.Cache{Tool: "go modules", Path: "/m"}, toolchaincache.Cache{Tool: "go build", Path: "/gc"},
				toolchaincache.Cache{Tool: "npm", Path: "/n"}, toolchaincache.Cache{Tool: "pip", Path: "/p"},
				toolchaincache.Cache{Tool: "uv", Path: "/u"}, toolchaincache.Cache{Tool: "cargo registry", Path: "/c/registry"},
				toolchaincache.Cache{Tool: "cargo git", Path: "/c/git"}, toolchaincache.Cache{Tool: "gradle", Path: "/g/caches"},
			),
		},
		{
			name: "GOPATH's first absolute entry and XDG_CACHE_HOME",
			env:  []string{"HOME=/h", "GOPATH=rel:/gp1:/gp2", "XDG_CACHE_HOME=/x", "NPM_CONFIG_CACHE=/N"},
			want: home(
				toolchaincache.Cache{Tool: "go modules", Path: "/gp1/pkg/mod"}, toolchaincache.Cache{Tool: "go build", Path: "/x/go-build"},
				toolchaincache.Cache{Tool: "npm", Path: "/N"}, toolchaincache.Cache{Tool: "pip", Path: "/x/pip"},
				toolchaincache.Cache{Tool: "uv", Path: "/x/uv"},
			),
		},
		{
			name: "GOCACHE=off has no build cache; relative values count as unset",
			env:  []string{"HOME=/h", "GOCACHE=off", "PIP_CACHE_DIR=rel"},
			want: append(home()[:1], home()[2:]...),
		},
		{
			name: "no HOME: only what variables name",
			env:  []string{"GOMODCACHE=/m", "CARGO_HOME=/c", "HOME=relative"},
			want: []toolchaincache.Cache{
				{Tool: "go modules", Path: "/m"}, {Tool: "cargo registry", Path: "/c/registry"}, {Tool: "cargo git", Path: "/c/git"},
			},
		},
		{name: "nothing", env: nil, want: []toolchaincache.Cache{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, toolchaincache.Candidates(c.env))
		})
	}
}

// TestExisting checks that only the caches present on disk as directories
// (or symlinks to directories) are returned.
func TestExisting(t *testing.T) {
	home := t.TempDir()
	elsewhere := t.TempDir()
	for _, d := range []string{"go/pkg/mod", ".npm", ".cargo/registry", ".cargo/bin"} {
		require.NoError(t, os.MkdirAll(filepath.Join(home, d), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "pip"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "pip"), filepath.Join(home, ".cache", "pip")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "missing"), filepath.Join(home, ".cache", "uv")))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".m2"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".m2", "repository"), []byte("a file"), 0o644))
	got := toolchaincache.Existing([]string{"HOME=" + home})
	assert.Equal(t, []toolchaincache.Cache{
		{Tool: "go modules", Path: filepath.Join(home, "go/pkg/mod")},
		{Tool: "npm", Path: filepath.Join(home, ".npm")},
		{Tool: "pip", Path: filepath.Join(home, ".cache/pip")},
		{Tool: "cargo registry", Path: filepath.Join(home, ".cargo/registry")},
	}, got)
}

//go:build linux

package search_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/search"
)

func globPaths(r search.GlobResult) []string {
	out := []string{}
	for _, f := range r.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestGlob(t *testing.T) {
	specs := []string{
		"main.go", "a/x.go", "a/b/y.go", "a/b/y_test.go", "a/readme.md", "cmd/tool/main.go", "cmd/tool/doc.txt",
		".hidden/h.go", "vendor/v.go", ".gitignore: vendor/\n", "link.go => main.go", "dirlink => a",
	}
	tests := []struct {
		name    string
		pattern string
		opts    search.GlobOptions
		want    []string // newest first: the fixture's mtimes descend in specs order
		matched int      // when trunc: the files that matched
		trunc   bool
	}{
		{name: "doublestar at any depth, newest first", pattern: "**/*.go", want: []string{"main.go", "a/x.go", "a/b/y.go", "a/b/y_test.go", "cmd/tool/main.go"}},
		{name: "a name pattern matches at any depth", pattern: "*_test.go", want: []string{"a/b/y_test.go"}},
		{name: "a pattern with a slash is anchored at the root", pattern: "*/x.go", want: []string{"a/x.go"}},
		{name: "static prefix", pattern: "cmd/**", want: []string{"cmd/tool/main.go", "cmd/tool/doc.txt"}},
		{name: "alternatives", pattern: "a/**/*.{md,go}", want: []string{"a/x.go", "a/b/y.go", "a/b/y_test.go", "a/readme.md"}},
		{name: "missing prefix finds nothing", pattern: "nope/**/*.go", want: []string{}},
		{name: "hidden on request", pattern: "**/h.go", opts: search.GlobOptions{Walk: search.WalkOptions{Hidden: true}}, want: []string{".hidden/h.go"}},
		{name: "ignored on request", pattern: "**/v.go", opts: search.GlobOptions{Walk: search.WalkOptions{NoIgnore: true}}, want: []string{"vendor/v.go"}},
		{name: "an explicit prefix walks an ignored directory", pattern: "vendor/*.go", want: []string{"vendor/v.go"}},
		{name: "capped", pattern: "**/*.go", opts: search.GlobOptions{Limit: 2}, want: []string{"main.go", "a/x.go"}, matched: 5, trunc: true},
		{name: "exactly at the cap", pattern: "cmd/**", opts: search.GlobOptions{Limit: 2}, want: []string{"cmd/tool/main.go", "cmd/tool/doc.txt"}},
	}
	root := t.TempDir()
	fixture.Build(t, root, specs...)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range specs {
		p := filepath.Join(root, s)
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			mt := base.Add(-time.Duration(i) * time.Hour)
			require.NoError(t, os.Chtimes(p, mt, mt))
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Pattern = tt.pattern
			res, err := search.Glob(context.Background(), root, opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, globPaths(res))
			assert.Equal(t, tt.trunc, res.Truncated)
			if tt.trunc {
				assert.Equal(t, tt.matched, res.Matched)
			} else {
				assert.Equal(t, len(tt.want), res.Matched)
			}
			for _, f := range res.Files {
				st, err := os.Stat(filepath.Join(root, f.Path))
				require.NoError(t, err)
				assert.True(t, st.ModTime().Equal(f.ModTime), f.Path)
			}
		})
	}
}

func TestGlobTiesInPathOrder(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "b.go", "a.go", "c/a.go")
	mt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []string{"b.go", "a.go", "c/a.go"} {
		require.NoError(t, os.Chtimes(filepath.Join(root, p), mt, mt))
	}
	res, err := search.Glob(context.Background(), root, search.GlobOptions{Pattern: "**/*.go"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.go", "b.go", "c/a.go"}, globPaths(res))
}

func TestGlobBadPattern(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"", "/etc/*", "../*", "a/../../x", "./a", "[", "a/{b"} {
		_, err := search.Glob(context.Background(), root, search.GlobOptions{Pattern: p})
		assert.ErrorIs(t, err, search.ErrBadPattern, p)
	}
}

//go:build linux

package search_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/search"
)

// walked returns the relative paths a walk yields, in order.
func walked(t *testing.T, root string, opts search.WalkOptions) ([]string, search.WalkStats) {
	t.Helper()
	var got []string
	stats, err := search.Walk(context.Background(), root, opts, func(e search.Entry) error {
		got = append(got, e.Rel)
		return nil
	})
	require.NoError(t, err)
	return got, stats
}

func TestWalk(t *testing.T) {
	outside := t.TempDir()
	fixture.Build(t, outside, "secret.txt: s", "d/inner.txt: i")
	tests := []struct {
		name  string
		specs []string
		sub   string // walk this directory beneath the fixture root
		opts  search.WalkOptions
		want  []string
	}{
		{
			name:  "depth first in byte order of names",
			specs: []string{"b.txt", "a/z.txt", "a/b/c.txt", "B.txt", "a.txt"},
			want:  []string{"B.txt", "a/b/c.txt", "a/z.txt", "a.txt", "b.txt"},
		},
		{
			name:  "hidden entries skipped by default",
			specs: []string{".env: x", ".config/c.txt", "v.txt"},
			want:  []string{"v.txt"},
		},
		{
			name:  "hidden entries included on request",
			specs: []string{".env: x", ".config/c.txt", "v.txt"},
			opts:  search.WalkOptions{Hidden: true},
			want:  []string{".config/c.txt", ".env", "v.txt"},
		},
		{
			name:  ".git is never entered, hidden or not",
			specs: []string{".git/config: c", ".git/objects/o", "a.txt"},
			opts:  search.WalkOptions{Hidden: true},
			want:  []string{"a.txt"},
		},
		{
			name:  "root .gitignore: names, globs, directories",
			specs: []string{".gitignore: *.log\nbuild/\n/top.txt\n", "a.log", "x/b.log", "build/out.txt", "x/build/o.txt", "top.txt", "x/top.txt", "keep.txt"},
			want:  []string{"keep.txt", "x/top.txt"},
		},
		{
			name:  "negation re-includes a file",
			specs: []string{".gitignore: *.log\n!keep.log\n", "a.log", "keep.log"},
			want:  []string{"keep.log"},
		},
		{
			name:  "nested .gitignore applies beneath its directory only",
			specs: []string{"a/.gitignore: *.txt\n", "a/x.txt", "a/b/y.txt", "a/k.go", "z.txt"},
			want:  []string{"a/k.go", "z.txt"},
		},
		{
			name:  "nested .gitignore anchored pattern is relative to its directory",
			specs: []string{"a/.gitignore: /gen\n", "a/gen/g.txt", "a/b/gen/g.txt", "gen/g.txt"},
			want:  []string{"a/b/gen/g.txt", "gen/g.txt"},
		},
		{
			name:  "nested negation overrides a parent pattern",
			specs: []string{".gitignore: *.gen\n", "a/.gitignore: !x.gen\n", "a/x.gen", "a/y.gen", "x.gen"},
			want:  []string{"a/x.gen"},
		},
		{
			name:  ".git/info/exclude applies at a repository root",
			specs: []string{".git/info/exclude: secret*\n", "secret.txt", "d/secret.key", "open.txt"},
			want:  []string{"open.txt"},
		},
		{
			name:  "CRLF ignore file",
			specs: []string{".gitignore: *.log\r\n# comment\r\n\r\n", "a.log", "b.txt"},
			want:  []string{"b.txt"},
		},
		{
			name:  "ignore files disregarded on request",
			specs: []string{".gitignore: *.log\n", ".git/info/exclude: *.txt\n", "a.log", "b.txt"},
			opts:  search.WalkOptions{NoIgnore: true},
			want:  []string{"a.log", "b.txt"},
		},
		{
			name:  "a subdirectory walk honors the repository's ancestors",
			specs: []string{".git/info/exclude: *.key\n", ".gitignore: *.log\nsub/gen/\n", "sub/.gitignore: *.tmp\n", "sub/a.log", "sub/a.key", "sub/a.tmp", "sub/gen/g.txt", "sub/a.txt"},
			sub:   "sub",
			want:  []string{"a.txt"},
		},
		{
			name:  "outside a repository only the tree's own .gitignore files count",
			specs: []string{".gitignore: *.log\n", "sub/a.log", "sub/a.txt"},
			sub:   "sub",
			want:  []string{"a.log", "a.txt"},
		},
		{
			name:  "symlinks are not followed, in or out",
			specs: []string{"real/f.txt", "in => real", "out => " + outside, "outd => " + filepath.Join(outside, "d"), "file => real/f.txt", "loop => .", "abs => /"},
			want:  []string{"real/f.txt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			fixture.Build(t, root, tt.specs...)
			got, stats := walked(t, filepath.Join(root, tt.sub), tt.opts)
			assert.Equal(t, tt.want, got)
			assert.Empty(t, stats.Problems)
			assert.Equal(t, len(tt.want), stats.Files)
			assert.False(t, stats.Truncated)
		})
	}
}

func TestWalkSkipsSpecialFiles(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "a.txt")
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	// A FIFO named like an ignore file is neither read nor walked.
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, ".gitignore"), 0o644))
	got, stats := walked(t, root, search.WalkOptions{})
	assert.Equal(t, []string{"a.txt"}, got)
	assert.Empty(t, stats.Problems)
}

func TestWalkBadEntryIsAProblemNotAFailure(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "a/f.txt", "b/g.txt", "c/h.txt")
	var got []string
	stats, err := search.Walk(context.Background(), root, search.WalkOptions{}, func(e search.Entry) error {
		got = append(got, e.Rel)
		if e.Rel == "a/f.txt" {
			// b was listed with its parent; it vanishes before it is opened.
			require.NoError(t, os.RemoveAll(filepath.Join(root, "b")))
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/f.txt", "c/h.txt"}, got)
	require.Len(t, stats.Problems, 1)
	assert.Equal(t, "b", stats.Problems[0].Path)
	assert.ErrorIs(t, stats.Problems[0].Err, os.ErrNotExist)
}

func TestWalkCap(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "a/1", "a/2", "b/3", "c")
	got, stats := walked(t, root, search.WalkOptions{MaxEntries: 5})
	// Entries counted: a, b, c (the root's listing), 1 and 2 (a's); b's
	// listing crosses the cap, and the walk stops before b.
	assert.Equal(t, []string{"a/1", "a/2"}, got)
	assert.True(t, stats.Truncated)
}

func TestWalkCancelled(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "a/1", "b/2")
	ctx, cancel := context.WithCancel(context.Background())
	var got []string
	_, err := search.Walk(ctx, root, search.WalkOptions{}, func(e search.Entry) error {
		got = append(got, e.Rel)
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"a/1"}, got)
}

func TestWalkRootErrors(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "f.txt", "real/", "link => real")
	for _, p := range []string{"missing", "f.txt", "link"} {
		_, err := search.Walk(context.Background(), filepath.Join(root, p), search.WalkOptions{}, func(search.Entry) error { return nil })
		var pe *os.PathError
		assert.ErrorAs(t, err, &pe, p)
	}
}

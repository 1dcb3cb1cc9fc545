//go:build linux

package fsbackend_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// TestSearchErrors pins the seam's errors of Glob and Grep: each carries its
// code, op and, for a target, the display path.
func TestSearchErrors(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.go: package a\n", "d/b.go: package b\n")
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	glob := func(ctx context.Context, base string, opts fs.GlobOptions) error {
		_, err := f.Glob(ctx, resolve(t, f, base), opts)
		return err
	}
	grep := func(ctx context.Context, base string, opts fs.GrepOptions) error {
		_, err := f.Grep(ctx, resolve(t, f, base), opts)
		return err
	}
	bg := context.Background()
	cases := []struct {
		name string
		err  error
		code fs.Code
		op   string
		msg  string
	}{
		{"glob of a file", glob(bg, "a.go", fs.GlobOptions{Pattern: "*"}), fs.CodeNotDirectory, "glob", `cannot search "` + dir + `/a.go": not a directory`},
		{"glob of a missing directory", glob(bg, "nope", fs.GlobOptions{Pattern: "*"}), fs.CodeNotFound, "glob", `cannot search "` + dir + `/nope": not found`},
		{"grep of a FIFO", grep(bg, "fifo", fs.GrepOptions{Pattern: "a"}), fs.CodeNotRegularFile, "grep", `cannot search "` + dir + `/fifo": not a regular file`},
		{"grep of a missing file", grep(bg, "nope.go", fs.GrepOptions{Pattern: "a"}), fs.CodeNotFound, "grep", `cannot search "` + dir + `/nope.go": not found`},
		{"glob cancelled", glob(cancelled(), ".", fs.GlobOptions{Pattern: "*"}), fs.CodeAborted, "glob", "glob aborted"},
		{"grep cancelled", grep(cancelled(), ".", fs.GrepOptions{Pattern: "a"}), fs.CodeAborted, "grep", "grep aborted"},
		{"glob with ..", glob(bg, ".", fs.GlobOptions{Pattern: "d/../../*"}), fs.CodeInvalidSearch, "glob", `invalid glob pattern "d/../../*": the pattern must not contain . or .. elements`},
		{"glob with a negative limit", glob(bg, ".", fs.GlobOptions{Pattern: "*", Limit: -1}), fs.CodeInvalidSearch, "glob", "limit must not be negative"},
		{"grep with a bad expression", grep(bg, ".", fs.GrepOptions{Pattern: "a["}), fs.CodeInvalidSearch, "grep", "invalid pattern: error parsing regexp: missing closing ]: `[`"},
		{"grep with a bad glob", grep(bg, ".", fs.GrepOptions{Pattern: "a", Glob: "{"}), fs.CodeInvalidSearch, "grep", `invalid glob pattern "{": syntax error in pattern`},
		{"grep with an unknown mode", grep(bg, ".", fs.GrepOptions{Pattern: "a", Mode: "lines"}), fs.CodeInvalidSearch, "grep", `unknown output mode "lines"`},
		{"grep with too much context", grep(bg, ".", fs.GrepOptions{Pattern: "a", Context: fs.MaxGrepContext + 1}), fs.CodeInvalidSearch, "grep", "context must be between 0 and 100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fe, ok := errors.AsType[*fs.Error](c.err)
			require.True(t, ok, "%v", c.err)
			assert.EqualValues(t, c.code, fe.Code)
			assert.Equal(t, c.op, fe.Op)
			assert.Equal(t, c.msg, fe.Error())
		})
	}
	assert.ErrorIs(t, cases[6].err, fs.ErrInvalidSearch)
}

// TestSearchResults checks the seam's results against the files on disk:
// both searches see the same tree, paths relative to the base.
func TestSearchResults(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.go: x\n", "d/b.go: y x\n", "d/c.txt: x\n", "d/.gitignore: *.txt\n", "d/loop => ..")
	g, err := f.Glob(context.Background(), resolve(t, f, "d"), fs.GlobOptions{Pattern: "*", SearchScope: fs.SearchScope{NoIgnore: true}})
	require.NoError(t, err)
	var paths []string
	for _, file := range g.Files {
		paths = append(paths, file.Path)
	}
	assert.ElementsMatch(t, []string{"b.go", "c.txt"}, paths)
	assert.Equal(t, 2, g.Matched)
	assert.False(t, g.Truncated)

	r, err := f.Grep(context.Background(), resolve(t, f, "."), fs.GrepOptions{Pattern: "x", Mode: fs.GrepContent})
	require.NoError(t, err)
	assert.Equal(t, []fs.GrepFile{
		{Path: "a.go", Count: 1, Lines: []fs.GrepLine{{Number: 1, Text: "x", Match: true}}},
		{Path: "d/b.go", Count: 1, Lines: []fs.GrepLine{{Number: 1, Text: "y x", Match: true}}},
	}, r.Files)
	assert.Equal(t, 2, r.Searched)
}

package search_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/search"
)

// nameGate skips the entries named skip and refuses, once opened, the
// directories and files whose path ends in refuse; it records every path
// Refuse was shown.
type nameGate struct {
	skip, refuse string
	mu           sync.Mutex
	shown        []string
}

func (g *nameGate) Skip(abs string, _ bool) bool { return filepath.Base(abs) == g.skip }

func (g *nameGate) Refuse(_ int, _ *unix.Stat_t, abs string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shown = append(g.shown, abs)
	return strings.HasSuffix(abs, g.refuse)
}

// TestWalkGate: a skipped entry is never opened nor yielded, a refused
// directory is not entered and a refused file not scanned, both counted in
// Denied; a refused walk root, or a refused single file, is ErrDenied.
func TestWalkGate(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, root, "a.txt: key", "skipme/b.txt: key", "refused/c.txt: key", "d/e.txt: key", "d/refused.txt: key")
	ctx := context.Background()

	gate := &nameGate{skip: "skipme", refuse: "refused"}
	got, stats := walked(t, root, search.WalkOptions{Gate: gate})
	assert.Equal(t, []string{"a.txt", "d/e.txt", "d/refused.txt"}, got, "the walk yields files; the scan decides them")
	assert.Equal(t, 2, stats.Denied, "skipme skipped, refused/ refused once opened")
	assert.NotContains(t, gate.shown, filepath.Join(root, "skipme"), "a skipped entry is never opened")

	res, err := search.Grep(ctx, root, search.GrepOptions{Pattern: "key", Walk: search.WalkOptions{Gate: &nameGate{skip: "skipme", refuse: "refused.txt"}}})
	require.NoError(t, err)
	var files []string
	for _, f := range res.Files {
		files = append(files, f.Path)
	}
	assert.Equal(t, []string{"a.txt", "d/e.txt", "refused/c.txt"}, files)
	assert.Equal(t, 2, res.Stats.Denied, "skipme skipped, d/refused.txt refused once opened")

	_, err = search.Grep(ctx, filepath.Join(root, "d", "refused.txt"), search.GrepOptions{Pattern: "key", Walk: search.WalkOptions{Gate: &nameGate{refuse: "refused.txt"}}})
	assert.True(t, errors.Is(err, search.ErrDenied), "%v", err)
	_, err = search.Grep(ctx, filepath.Join(root, "refused"), search.GrepOptions{Pattern: "key", Walk: search.WalkOptions{Gate: &nameGate{refuse: "refused"}}})
	assert.True(t, errors.Is(err, search.ErrDenied), "%v", err)
	_, err = search.Glob(ctx, filepath.Join(root, "refused"), search.GlobOptions{Pattern: "*", Walk: search.WalkOptions{Gate: &nameGate{refuse: "refused"}}})
	assert.True(t, errors.Is(err, search.ErrDenied), "%v", err)
}

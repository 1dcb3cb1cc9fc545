//go:build linux

package protectscan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeptCurrent_WatchBudgetSpent: past the watch budget a directory is
// not watched, so nothing of a scan holding it is kept: each scan walks
// (the cached walk), finds what a change made, and Notifications says why.
func TestKeptCurrent_WatchBudgetSpent(t *testing.T) {
	n := notify()
	if n.fd < 0 {
		t.Skip(n.reason)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	n.mu.Lock()
	limit := n.limit
	// Spent, however many watches other tests' removed directories give
	// back meanwhile (the budget at the current count was not: a
	// directory removed by an earlier test's cleanup freed one, and this
	// one was watched).
	n.limit = 0
	n.mu.Unlock()
	t.Cleanup(func() {
		n.mu.Lock()
		n.limit = limit
		n.mu.Unlock()
	})
	ok, why := Notifications()
	assert.False(t, ok)
	assert.Contains(t, why, "budget")

	match := func(rel string, _ bool) bool { return filepath.Base(rel) == ".git" }
	s := New(Options{})
	roots := []Root{{Path: dir}}
	for range 2 {
		w, out, err := s.scanWalk(t.Context(), roots, match)
		require.NoError(t, err)
		assert.False(t, w.reused, "unwatched: walked each time")
		assert.Empty(t, out)
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "a/b/.git"), 0o755))
	w, out, err := s.scanWalk(t.Context(), roots, match)
	require.NoError(t, err)
	assert.False(t, w.reused)
	require.Len(t, out, 1)
	assert.Equal(t, filepath.Join(dir, "a/b/.git"), out[0].Path)
}

//go:build linux

package protectscan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinkCache: a directory unchanged since a reading older than the racy
// window is listed from the cache; a symlink made in it since (its mtime
// moves) is listed at the next search; one read within the window is read
// again.
func TestLinkCache(t *testing.T) {
	d := t.TempDir()
	require.NoError(t, os.Symlink("x", filepath.Join(d, "a")))
	require.NoError(t, os.Mkdir(filepath.Join(d, "sub"), 0o755))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(d, old, old))
	var c linkCache
	first, ok := c.list(d)
	require.True(t, ok)
	assert.Equal(t, []string{"a"}, first.links)
	assert.Equal(t, []string{"sub"}, first.dirs)
	assert.Equal(t, 2, first.entries)
	again, ok := c.list(d)
	require.True(t, ok)
	assert.Same(t, first, again, "unchanged: from the cache")

	require.NoError(t, os.Symlink("y", filepath.Join(d, "b")))
	fresh, ok := c.list(d)
	require.True(t, ok)
	assert.Equal(t, []string{"a", "b"}, fresh.links)
	racy, ok := c.list(d)
	require.True(t, ok)
	assert.NotSame(t, fresh, racy, "changed within the racy window: read again")
}

//go:build linux

package protectscan_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
)

// TestAliases (the attack review of ff9821f): the other names of a file
// beneath the roots, at any depth, in each root, but the one skipped and
// none reached through a symlink or outside the roots; the walk stops once
// it has as many as asked for, and a cancelled one says so.
func TestAliases(t *testing.T) {
	root, other, outside := tempRoot(t), tempRoot(t), tempRoot(t)
	build(t, root, ".git/config", "a/b/c/", "via/", "decoy")
	config := filepath.Join(root, ".git", "config")
	for _, p := range []string{
		filepath.Join(root, "top"), filepath.Join(root, "a/b/c/deep"), filepath.Join(root, ".git/alias"),
		filepath.Join(other, "elsewhere"), filepath.Join(outside, "outside"),
	} {
		require.NoError(t, os.Link(config, p))
	}
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "via", "out")))
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(config, &st))

	got, err := protectscan.Aliases(t.Context(), []string{root, other}, st.Dev, st.Ino, config, 10)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(root, "top"), filepath.Join(root, "a/b/c/deep"), filepath.Join(root, ".git/alias"), filepath.Join(other, "elsewhere")}, got)

	got, err = protectscan.Aliases(t.Context(), []string{root, other}, st.Dev, st.Ino, config, 2)
	require.NoError(t, err)
	assert.Len(t, got, 2)

	got, err = protectscan.Aliases(t.Context(), []string{filepath.Join(root, "missing"), filepath.Join(root, "a")}, st.Dev, st.Ino, config, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(root, "a/b/c/deep")}, got)

	// Another device: nothing is read.
	got, err = protectscan.Aliases(t.Context(), []string{root}, st.Dev+1, st.Ino, config, 10)
	require.NoError(t, err)
	assert.Empty(t, got)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = protectscan.Aliases(ctx, []string{root}, st.Dev, st.Ino, config, 10)
	assert.ErrorIs(t, err, context.Canceled)
}

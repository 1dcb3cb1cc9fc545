//go:build linux

package protectscan_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
	// Fewer names than asked for: the walk is complete only when no
	// directory it read changed from shortly before it began.
	time.Sleep(2 * protectscan.AliasesRacy)

	got, complete, err := protectscan.Aliases(t.Context(), []string{root, other}, st.Dev, st.Ino, config, 10)
	require.NoError(t, err)
	assert.True(t, complete)
	assert.ElementsMatch(t, []string{filepath.Join(root, "top"), filepath.Join(root, "a/b/c/deep"), filepath.Join(root, ".git/alias"), filepath.Join(other, "elsewhere")}, got)

	got, _, err = protectscan.Aliases(t.Context(), []string{root, other}, st.Dev, st.Ino, config, 2)
	require.NoError(t, err)
	assert.Len(t, got, 2)

	got, _, err = protectscan.Aliases(t.Context(), []string{filepath.Join(root, "missing"), filepath.Join(root, "a")}, st.Dev, st.Ino, config, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(root, "a/b/c/deep")}, got)

	// Another device: nothing is read.
	got, _, err = protectscan.Aliases(t.Context(), []string{root}, st.Dev+1, st.Ino, config, 10)
	require.NoError(t, err)
	assert.Empty(t, got)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = protectscan.Aliases(ctx, []string{root}, st.Dev, st.Ino, config, 10)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestAliasesOneDirectoryOpenAtATime (the attack review of b155b40): the
// walk holds one directory open at a time, so a wide tree does not run the
// server out of descriptors, where a directory it could not open was
// skipped with no error and the names in it went unprotected; and a
// directory the server may not read is skipped (its user's commands may not
// reach it either).
func TestAliasesOneDirectoryOpenAtATime(t *testing.T) {
	root := tempRoot(t)
	build(t, root, ".git/config", "wide/")
	config := filepath.Join(root, ".git", "config")
	for i := range 400 {
		d := filepath.Join(root, "wide", strconv.Itoa(i))
		require.NoError(t, os.Mkdir(d, 0o755))
		require.NoError(t, os.Link(config, filepath.Join(d, "alias")))
	}
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(config, &st))
	open, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	low := lim
	low.Cur = uint64(len(open) + 32)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &low))
	got, complete, err := protectscan.Aliases(t.Context(), []string{root}, st.Dev, st.Ino, config, int(st.Nlink)-1)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	require.NoError(t, err)
	assert.True(t, complete)
	assert.Len(t, got, 400, "every name found under a soft limit of %d descriptors", low.Cur)

	if os.Geteuid() == 0 {
		return // root reads a directory of mode 0
	}
	// A directory the server cannot read is an error: its owner's
	// command may make it readable again (the second attack review).
	require.NoError(t, os.Chmod(filepath.Join(root, "wide", "7"), 0))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(root, "wide", "7"), 0o755) })
	_, _, err = protectscan.Aliases(t.Context(), []string{root}, st.Dev, st.Ino, config, int(st.Nlink)-1)
	assert.ErrorIs(t, err, unix.EACCES)
}

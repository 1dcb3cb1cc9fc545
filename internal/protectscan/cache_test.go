//go:build linux

package protectscan_test

import (
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
)

func TestScan_CacheSeesANewNestedGitAtOnce(t *testing.T) {
	cases := []struct {
		name         string
		age          bool // age the tree before the first scan: not racy then
		restoreMtime bool // put the directory's mtime back after adding .git
	}{
		// Read within 2 s of its last change: the racy rule reads it again.
		{name: "a directory changed just before the scan"},
		// Read long after its last change: the new mtime shows.
		{name: "an old directory", age: true},
		// The mtime put back as the cache saw it: the ctime shows.
		{name: "an old directory whose mtime is put back", age: true, restoreMtime: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := tempRoot(t)
			build(t, base, "ws/a/b/file", "ws/c/")
			if tc.age {
				ageTree(t, base)
			}
			roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
			s := protectscan.NewWalking(protectscan.Options{})
			assert.Empty(t, scanWithin(t, s, roots))

			dir := filepath.Join(base, "ws/a/b")
			var before unix.Stat_t
			require.NoError(t, unix.Stat(dir, &before))
			require.NoError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
			if tc.restoreMtime {
				require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, dir,
					[]unix.Timespec{before.Atim, before.Mtim}, 0))
			}
			assert.Equal(t, []string{"ws/a/b/.git"}, pathsOf(t, base, scanWithin(t, s, roots)))
		})
	}
}

func TestScan_CacheAnswersUnchangedDirectories(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/a/.git/", "ws/a/f1", "ws/a/f2", "ws/b/c/secret.key", "ws/b/c/d/", "ws/e")
	ageTree(t, base)
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	s := protectscan.NewWalking(protectscan.Options{})
	want := []string{"ws/a/.git", "ws/b/c/secret.key"}

	entries, read, err := s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, want, pathsOf(t, base, entries))
	// ws: a b e; a: .git f1 f2; b: c; c: secret.key d; d: nothing.
	assert.Equal(t, 9, read)
	assert.Equal(t, 5, s.CachedDirs())

	entries, read, err = s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, want, pathsOf(t, base, entries))
	assert.Zero(t, read, "every directory answered from the cache")

	// One directory changes: only it is read again.
	build(t, base, "ws/b/c/g")
	entries, read, err = s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, want, pathsOf(t, base, entries))
	assert.Equal(t, 3, read, "c read again: secret.key d g")

	// A directory answered from the cache still has its entries' identity
	// as found, and its .git file is read again each time.
	entries, read, err = protectscan.NewWalking(protectscan.Options{}).ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, want, pathsOf(t, base, entries))
	assert.Equal(t, 10, read, "another Scanner has its own cache")
}

func TestScan_CacheRereadsAGitFile(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/.git=gitdir: one\n", "ws/one/", "ws/two/")
	ageTree(t, base)
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	s := protectscan.NewWalking(protectscan.Options{})
	assert.Equal(t, []string{"ws/.git", "ws/one"}, pathsOf(t, base, scanWithin(t, s, roots)))

	// Rewritten in place: the directory holding it does not change.
	f, err := os.OpenFile(filepath.Join(base, "ws/.git"), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.WriteString("gitdir: two\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	entries, read, err := s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Zero(t, read)
	assert.Equal(t, []string{"ws/.git", "ws/two"}, pathsOf(t, base, entries))
}

func TestScan_CacheKeysByPathInTheRoot(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/b/x.key", "ws/b/sub/")
	ageTree(t, base)
	// Protects x.key only directly in a directory named a.
	anchored := func(rel string, _ bool) bool { return path.Dir(rel) == "a" && path.Base(rel) == "x.key" }
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	s := protectscan.NewWalking(protectscan.Options{})
	entries, err := s.Scan(t.Context(), roots, anchored)
	require.NoError(t, err)
	assert.Empty(t, entries)

	require.NoError(t, os.Rename(filepath.Join(base, "ws/b"), filepath.Join(base, "ws/a")))
	entries, err = s.Scan(t.Context(), roots, anchored)
	require.NoError(t, err)
	assert.Equal(t, []string{"ws/a/x.key"}, pathsOf(t, base, entries))
}

func TestScan_CacheWaitsOutTheRacyWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 2 s")
	}
	base := tempRoot(t)
	build(t, base, "ws/a/")
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	s := protectscan.NewWalking(protectscan.Options{})
	_, read, err := s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, 1, read)
	_, read, err = s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, 1, read, "changed within 2 s of its reading: read again")
	time.Sleep(2100 * time.Millisecond)
	_, read, err = s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, 1, read, "read 2 s after its change: cached now")
	_, read, err = s.ScanCounted(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Zero(t, read)
}

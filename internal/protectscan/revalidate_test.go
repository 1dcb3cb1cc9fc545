//go:build linux

package protectscan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The tests of a cached subdirectory revalidated by one lstat from its
// parent (walk.revalidate). Several make the cache trust a listing as it is
// (trustAsIs): what a change in the clock tick of the reading, or during the
// scan, would leave the cache believing.

// metaOnly protects the version-control metadata names.
func metaOnly(rel string, _ bool) bool {
	switch filepath.Base(rel) {
	case ".git", ".hg", ".jj", ".svn":
		return true
	}
	return false
}

// mkTree creates the directories dirs (with their parents) beneath base and
// sets the mtime of every directory beneath base an hour back.
func mkTree(t *testing.T, base string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	age(t, base)
}

// age sets the mtime of every directory beneath base (and base) an hour
// back, not following symlinks.
func age(t *testing.T, base string) {
	t.Helper()
	old := unix.NsecToTimespec(time.Now().Add(-time.Hour).UnixNano())
	require.NoError(t, filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{old, old}, unix.AT_SYMLINK_NOFOLLOW)
	}))
}

// trustAsIs makes the one listing s caches for rel (under the owner rule
// owner) fresh for the present times of the directory dir, as read
// readAfter after its last change, whatever dir holds; it is keyed by dir's
// identity too unless keepIdentity.
func trustAsIs(t *testing.T, s *Scanner, dir, rel string, owner int, readAfter time.Duration, keepIdentity bool) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(dir, &st))
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	var keys []dirKey
	for k := range s.cache.dirs {
		if k.rel == rel && k.owner == owner {
			keys = append(keys, k)
		}
	}
	require.Len(t, keys, 1, "listings cached for %q", rel)
	l := *s.cache.dirs[keys[0]]
	l.mtime, l.ctime = st.Mtim.Nano(), st.Ctim.Nano()
	l.readAt = l.mtime + readAfter.Nanoseconds()
	k := keys[0]
	delete(s.cache.dirs, k)
	if !keepIdentity {
		k.dev, k.ino = st.Dev, st.Ino
	}
	s.cache.dirs[k] = &l
}

// scanRel scans roots with s and returns the entries' paths relative to
// base, and how many entries it read from uncached directories.
func scanRel(t *testing.T, s *Scanner, base string, roots []Root, match Match) ([]string, int) {
	t.Helper()
	entries, read, err := s.scan(t.Context(), roots, match)
	require.NoError(t, err)
	out := []string{}
	for _, e := range entries {
		rel, err := filepath.Rel(base, e.Path)
		require.NoError(t, err)
		out = append(out, rel)
	}
	return out, read
}

// canonicalTemp returns a fresh canonical directory.
func canonicalTemp(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

func TestRevalidate_UnchangedLeavesAreNotRead(t *testing.T) {
	base := canonicalTemp(t)
	ws := filepath.Join(base, "ws")
	mkTree(t, base, "ws/leaf/.git", "ws/leaf2", "ws/n/sub/.git")
	roots := []Root{{Path: ws}}
	s := New(Options{})
	want := []string{"ws/leaf/.git", "ws/n/sub/.git"}
	got, _ := scanRel(t, s, base, roots, metaOnly)
	assert.Equal(t, want, got)
	got, read := scanRel(t, s, base, roots, metaOnly)
	assert.Equal(t, want, got)
	assert.Zero(t, read)
	var leaf, n *listing
	for k, l := range s.cache.dirs {
		switch k.rel {
		case "leaf":
			leaf = l
		case "n":
			n = l
		}
	}
	require.NotNil(t, leaf)
	require.NotNil(t, n)
	assert.False(t, leaf.needsFD(), "a leaf holding a .git directory is revalidated by lstat")
	assert.True(t, n.needsFD(), "a directory with a subdirectory is opened")
}

func TestRevalidate_CachedDirectoryReplacedByASymlink(t *testing.T) {
	for _, staleParent := range []bool{false, true} {
		name := "the parent read again"
		if staleParent {
			name = "the parent's listing trusted as it is"
		}
		t.Run(name, func(t *testing.T) {
			base := canonicalTemp(t)
			ws := filepath.Join(base, "ws")
			// leaf and leaf2: revalidated by lstat; n: opened (it has a
			// subdirectory).
			mkTree(t, base, "ws/leaf/.git", "ws/leaf2", "ws/n/sub", "outside/.git")
			roots := []Root{{Path: ws}}
			s := New(Options{})
			got, _ := scanRel(t, s, base, roots, metaOnly)
			require.Equal(t, []string{"ws/leaf/.git"}, got)

			// leaf becomes a symlink to its old self, leaf2 one to a
			// directory outside holding a .git, n one to its old self, now
			// holding a .git.
			in := func(p string) string { return filepath.Join(ws, p) }
			require.NoError(t, os.Rename(in("leaf"), in("leaf.old")))
			require.NoError(t, os.Symlink("leaf.old", in("leaf")))
			require.NoError(t, os.Remove(in("leaf2")))
			require.NoError(t, os.Symlink(filepath.Join(base, "outside"), in("leaf2")))
			require.NoError(t, os.Rename(in("n"), in("n.old")))
			require.NoError(t, os.Mkdir(in("n.old/.git"), 0o755))
			require.NoError(t, os.Symlink("n.old", in("n")))
			age(t, base)
			want := []string{"ws/leaf.old/.git", "ws/n.old/.git"}
			if staleParent {
				// The cache still lists leaf, leaf2 and n as ws's
				// subdirectories (and not the .old ones), and leaf's
				// listing, keyed by leaf.old's identity, is trusted as it
				// is.
				trustAsIs(t, s, ws, "", -1, time.Hour, false)
				trustAsIs(t, s, in("leaf.old"), "leaf", -1, time.Hour, false)
				want = []string{}
			}
			got, _ = scanRel(t, s, base, roots, metaOnly)
			assert.Equal(t, want, got, "nothing found through a symlink")
		})
	}
}

func TestRevalidate_CachedDirectoryRenamedAwayAndReplaced(t *testing.T) {
	for _, staleParent := range []bool{false, true} {
		name := "the parent read again"
		if staleParent {
			// And a's listing has the newcomer's very times: only its
			// identity tells them apart.
			name = "the parent's listing trusted as it is"
		}
		t.Run(name, func(t *testing.T) {
			base := canonicalTemp(t)
			ws := filepath.Join(base, "ws")
			mkTree(t, base, "ws/a", "ws/b")
			roots := []Root{{Path: ws}}
			s := New(Options{})
			got, _ := scanRel(t, s, base, roots, metaOnly)
			require.Empty(t, got)

			var old unix.Stat_t
			require.NoError(t, unix.Lstat(filepath.Join(ws, "a"), &old))
			require.NoError(t, os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "gone")))
			require.NoError(t, os.MkdirAll(filepath.Join(ws, "a.new/.git"), 0o755))
			require.NoError(t, os.Rename(filepath.Join(ws, "a.new"), filepath.Join(ws, "a")))
			age(t, base)
			// The newcomer even has the old one's mtime.
			require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(ws, "a"),
				[]unix.Timespec{old.Atim, old.Mtim}, unix.AT_SYMLINK_NOFOLLOW))
			if staleParent {
				trustAsIs(t, s, ws, "", -1, time.Hour, false)
				trustAsIs(t, s, filepath.Join(ws, "a"), "a", -1, time.Hour, true)
			}
			got, _ = scanRel(t, s, base, roots, metaOnly)
			assert.Equal(t, []string{"ws/a/.git"}, got)
		})
	}
}

func TestRevalidate_GitAddedInTheRacyWindow(t *testing.T) {
	cases := []struct {
		name      string
		readAfter time.Duration // after the directory's last change
		want      []string
	}{
		// Read 1 s after its change: the listing is never trusted.
		{name: "within the window: found", readAfter: time.Second, want: []string{"ws/a/.git"}},
		// The control: a listing read 3 s after is trusted as it is (so
		// this test does reach the revalidation by lstat).
		{name: "past the window: the listing is trusted", readAfter: 3 * time.Second, want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := canonicalTemp(t)
			ws := filepath.Join(base, "ws")
			mkTree(t, base, "ws/a", "ws/b")
			roots := []Root{{Path: ws}}
			s := New(Options{})
			got, _ := scanRel(t, s, base, roots, metaOnly)
			require.Empty(t, got)

			// Added in the clock tick of a's reading: a's times as the
			// cache saw them.
			require.NoError(t, os.Mkdir(filepath.Join(ws, "a/.git"), 0o755))
			trustAsIs(t, s, filepath.Join(ws, "a"), "a", -1, tc.readAfter, false)
			got, read := scanRel(t, s, base, roots, metaOnly)
			assert.Equal(t, tc.want, got)
			if len(tc.want) == 0 {
				assert.Zero(t, read)
			}
		})
	}
}

func TestRevalidate_SharedRootOwnerChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give entries to other uids")
	}
	const owner, other = 4242, 12345
	base := canonicalTemp(t)
	tmp := filepath.Join(base, "tmp")
	mkTree(t, base, "tmp/mine/.git", "tmp/mine2/.git")
	for _, p := range []string{"mine", "mine/.git", "mine2", "mine2/.git"} {
		require.NoError(t, os.Lchown(filepath.Join(tmp, p), owner, owner))
	}
	age(t, base)
	roots := []Root{{Path: tmp, Shared: true, Owner: owner}}
	s := New(Options{})
	want := []string{"tmp/mine/.git", "tmp/mine2/.git"}
	got, _ := scanRel(t, s, base, roots, metaOnly)
	require.Equal(t, want, got)
	got, read := scanRel(t, s, base, roots, metaOnly)
	require.Equal(t, want, got)
	require.Zero(t, read)

	// mine given to another user (tmp unchanged); its cached listing even
	// trusted as it is.
	require.NoError(t, os.Lchown(filepath.Join(tmp, "mine"), other, other))
	trustAsIs(t, s, filepath.Join(tmp, "mine"), "mine", owner, time.Hour, false)
	got, _ = scanRel(t, s, base, roots, metaOnly)
	assert.Equal(t, []string{"tmp/mine2/.git"}, got, "another user's directory is ignored")

	// Given back: found again.
	require.NoError(t, os.Lchown(filepath.Join(tmp, "mine"), owner, owner))
	age(t, base)
	got, _ = scanRel(t, s, base, roots, metaOnly)
	assert.Equal(t, want, got)
	assert.True(t, slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "tmp/mine/") }))
}

// TestRevalidate_RepositoryLeafKeepsItsPath: a directory shaped like a
// repository with no subdirectory (a linked worktree's gitdir: HEAD,
// commondir, gitdir) answered from the cache by one lstat is reported at
// its own path with its own identity, not at its parent's path (which
// would protect the parent, the whole root when the gitdir lies at its top,
// and make a bind mount of it fail its identity check).
func TestRevalidate_RepositoryLeafKeepsItsPath(t *testing.T) {
	base := canonicalTemp(t)
	ws := filepath.Join(base, "ws")
	mkTree(t, base, "ws/gd", "ws/common/objects", "ws/common/refs", "ws/sub")
	for name, text := range map[string]string{
		"ws/gd/HEAD": "ref: refs/heads/wt\n", "ws/gd/commondir": "../common\n", "ws/gd/gitdir": "x\n",
		"ws/common/HEAD": "ref: refs/heads/main\n", "ws/sub/plain": "",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(base, name), []byte(text), 0o644))
	}
	age(t, base)
	roots := []Root{{Path: ws}}
	s := New(Options{})
	want := []string{"ws/common", "ws/gd"}
	got, _ := scanRel(t, s, base, roots, metaOnly)
	require.Equal(t, want, got)
	entries, read, err := s.scan(t.Context(), roots, metaOnly)
	require.NoError(t, err)
	assert.Zero(t, read, "the second scan answers from the cache")
	dev, ino := identityOf(t, filepath.Join(ws, "gd"))
	var gd *Entry
	for i := range entries {
		if entries[i].Path == filepath.Join(ws, "gd") {
			gd = &entries[i]
		}
		assert.NotEqual(t, ws, entries[i].Path, "the root is not a repository")
	}
	require.NotNil(t, gd, "the gitdir answered from the cache is reported at its path")
	assert.Equal(t, [2]uint64{dev, ino}, [2]uint64{gd.Dev, gd.Ino})
}

// identityOf returns p's device and inode (lstat).
func identityOf(t *testing.T, p string) (dev, ino uint64) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return st.Dev, st.Ino
}

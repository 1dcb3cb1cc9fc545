//go:build linux

package protectscan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/subproc"
)

// requireNotifications skips a test of the kept results where the kernel
// gives no inotify.
func requireNotifications(t *testing.T) {
	t.Helper()
	if ok, why := protectscan.Notifications(); !ok {
		t.Skip("scans are not kept current here: " + why)
	}
}

// walked is what a scanner with no kept results finds in roots: the
// reference every kept result must equal.
func walked(t *testing.T, roots []protectscan.Root) []protectscan.Entry {
	t.Helper()
	entries, err := protectscan.NewWalking(protectscan.Options{}).Scan(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	return entries
}

func TestKeptCurrent_AnUnchangedTreeIsNotWalkedAgain(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/a/.git/", "ws/b/c/secret.key", "ws/b/c/d/", "ws/e")
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	s := protectscan.New(protectscan.Options{})
	first, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused, "the first scan walks")
	again, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.True(t, reused, "nothing changed: the kept result")
	assert.Equal(t, first, again)

	// Ordinary work that changes nothing protected: files written,
	// replaced by rename (an atomic write), removed.
	build(t, base, "ws/b/c/d/new.txt=x", "ws/e=rewritten")
	require.NoError(t, os.WriteFile(filepath.Join(base, "ws/b/tmp"), []byte("y"), 0o644))
	require.NoError(t, os.Rename(filepath.Join(base, "ws/b/tmp"), filepath.Join(base, "ws/b/out.txt")))
	require.NoError(t, os.Remove(filepath.Join(base, "ws/b/c/d/new.txt")))
	again, reused, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.True(t, reused, "no change that matters: still kept")
	assert.Equal(t, walked(t, roots), again)
}

// TestKeptCurrent_NothingFoundIsKeptToo (issue 34): a scan that found
// nothing (the deny-read walk of a workspace without secrets, the socket
// walk of one without sockets) is kept like any other: a file removed or
// renamed away is no change that matters (it dropped the result, and every
// command's placeholders, removed after it, made each scan walk again).
func TestKeptCurrent_NothingFoundIsKeptToo(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/a/f=x", "ws/b/", "ws/g=y")
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	s := protectscan.New(protectscan.Options{})
	first, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	require.False(t, reused)
	require.Empty(t, first)
	require.NoError(t, os.Remove(filepath.Join(base, "ws/a/f")))
	require.NoError(t, os.Rename(filepath.Join(base, "ws/g"), filepath.Join(base, "ws/b/g")))
	require.NoError(t, os.Remove(filepath.Join(base, "ws/b")+"/g"))
	// Directories the walk entered and watched, removed or moved away
	// whole (a runner's placeholder is one such).
	require.NoError(t, os.Remove(filepath.Join(base, "ws/b")))
	require.NoError(t, os.Rename(filepath.Join(base, "ws/a"), filepath.Join(base, "away")))
	again, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.True(t, reused, "nothing protected was removed: the kept result")
	assert.Empty(t, again)
	// Moved within the roots: walked again where it is now.
	build(t, base, "ws/c/", "away/in.key=k")
	_, _, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	require.NoError(t, os.Rename(filepath.Join(base, "away"), filepath.Join(base, "ws/c/back")))
	again, reused, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused, "a directory moved in: walked again")
	require.Len(t, again, 1)
	assert.Equal(t, filepath.Join(base, "ws/c/back/in.key"), again[0].Path)
	// A directory holding a finding, removed.
	require.NoError(t, os.RemoveAll(filepath.Join(base, "ws/c")))
	again, reused, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused, "a finding went with its directory")
	assert.Empty(t, again)
	build(t, base, "ws/a/new.key=k")
	again, reused, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused, "a protected name made: walked again")
	assert.Len(t, again, 1)
}

// TestKeptCurrent_ARootReplacedIsWalked (attack review of issue 34): a
// root removed or moved and another directory put at its path, or the same
// done to a directory above it (no watched directory tells), is walked
// again: the kept result was of another directory.
func TestKeptCurrent_ARootReplacedIsWalked(t *testing.T) {
	requireNotifications(t)
	for _, c := range []struct {
		name    string
		replace func(t *testing.T, base string)
	}{
		{"the root removed and made again", func(t *testing.T, base string) {
			require.NoError(t, os.RemoveAll(filepath.Join(base, "p/ws")))
		}},
		{"the root moved away", func(t *testing.T, base string) {
			require.NoError(t, os.Rename(filepath.Join(base, "p/ws"), filepath.Join(base, "old")))
		}},
		{"its parent moved away", func(t *testing.T, base string) {
			require.NoError(t, os.Rename(filepath.Join(base, "p"), filepath.Join(base, "old")))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := tempRoot(t)
			build(t, base, "p/ws/a/f=x")
			roots := []protectscan.Root{{Path: filepath.Join(base, "p/ws")}}
			s := protectscan.New(protectscan.Options{})
			_, _, err := s.ScanReused(t.Context(), roots, protectMeta)
			require.NoError(t, err)
			_, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
			require.NoError(t, err)
			require.True(t, reused)
			c.replace(t, base)
			build(t, base, "p/ws/.git/hooks/", "p/ws/id.key=k")
			got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
			require.NoError(t, err)
			assert.False(t, reused, "another directory: walked")
			assert.Equal(t, walked(t, roots), got)
			assert.Len(t, got, 2)
		})
	}
}

// TestKeptCurrent_HiddenChanges (attack review of issue 34): what tells no
// watched directory's listing still drops a kept result: a placeholder file
// written in place (it is a real protected file then), a filesystem mounted
// inside a root.
func TestKeptCurrent_HiddenChanges(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/a/b/", "src/.git/")
	ws := filepath.Join(base, "ws")
	roots := []protectscan.Root{{Path: ws}}
	s := protectscan.New(protectscan.Options{})

	p := filepath.Join(ws, "a/x.key")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // test
	require.NoError(t, unix.Setxattr(p, protectscan.PlaceholderXattr, []byte("1"), 0))
	require.NoError(t, os.Chmod(p, 0o444))
	t.Cleanup(func() { _ = os.Chmod(p, 0o644) })
	for range 2 {
		got, _, err := s.ScanReused(t.Context(), roots, protectMeta)
		require.NoError(t, err)
		require.Empty(t, got, "a placeholder is no finding")
	}
	_, err = f.WriteString("key material")
	require.NoError(t, err)
	got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused, "a placeholder written in place")
	assert.Equal(t, []string{"ws/a/x.key"}, pathsOf(t, base, got))

	if os.Geteuid() != 0 {
		return
	}
	_, reused, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	require.True(t, reused)
	if err := unix.Mount(filepath.Join(base, "src"), filepath.Join(ws, "a/b"), "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(ws, "a/b"), unix.MNT_DETACH) })
	got, reused, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused, "a filesystem mounted inside the root")
	assert.Equal(t, []string{"ws/a/b/.git", "ws/a/x.key"}, pathsOf(t, base, got))
}

// TestKeptCurrent_EveryChangeThatMattersIsSeen: each change a protected-path
// search must see, made after a scan, is in the next scan's result, which
// equals a fresh walk's (identities included).
func TestKeptCurrent_EveryChangeThatMattersIsSeen(t *testing.T) {
	requireNotifications(t)
	cases := []struct {
		name   string
		change func(t *testing.T, ws string)
	}{
		{"a .git made deep down", func(t *testing.T, ws string) { build(t, ws, "b/c/d/.git/") }},
		{"a protected file made", func(t *testing.T, ws string) { build(t, ws, "b/c/new.key") }},
		{"a protected file replaced by rename", func(t *testing.T, ws string) {
			build(t, ws, "b/tmp=other")
			require.NoError(t, os.Rename(filepath.Join(ws, "b/tmp"), filepath.Join(ws, "b/c/secret.key")))
		}},
		{"a protected file removed", func(t *testing.T, ws string) {
			require.NoError(t, os.Remove(filepath.Join(ws, "b/c/secret.key")))
		}},
		{"a directory holding a .git moved", func(t *testing.T, ws string) {
			require.NoError(t, os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "b/c/d/moved")))
		}},
		{"a directory moved in from outside the root", func(t *testing.T, ws string) {
			out := filepath.Join(filepath.Dir(ws), "outside")
			build(t, out, "x/.git/", "x/y.key")
			require.NoError(t, os.Rename(filepath.Join(out, "x"), filepath.Join(ws, "b/c/d/x")))
		}},
		{"a directory shaped like a repository", func(t *testing.T, ws string) {
			build(t, ws, "b/bare/HEAD=ref: refs/heads/main\n", "b/bare/objects/", "b/bare/refs/")
		}},
		{"a .git file pointing elsewhere, rewritten in place", func(t *testing.T, ws string) {
			f, err := os.OpenFile(filepath.Join(ws, "b/.git"), os.O_WRONLY|os.O_TRUNC, 0)
			require.NoError(t, err)
			_, err = f.WriteString("gitdir: " + filepath.Join(ws, "e") + "\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"a directory replaced by a symlink", func(t *testing.T, ws string) {
			require.NoError(t, os.RemoveAll(filepath.Join(ws, "a")))
			require.NoError(t, os.Symlink("/", filepath.Join(ws, "a")))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := tempRoot(t)
			build(t, base, "ws/a/.git/", "ws/b/c/secret.key", "ws/b/c/d/", "ws/b/.git=gitdir: "+filepath.Join(base, "ws/b/c/d")+"\n", "ws/e/")
			ws := filepath.Join(base, "ws")
			roots := []protectscan.Root{{Path: ws}}
			s := protectscan.New(protectscan.Options{})
			for range 2 { // walked, then kept
				_, err := s.Scan(t.Context(), roots, protectMeta)
				require.NoError(t, err)
			}
			tc.change(t, ws)
			got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
			require.NoError(t, err)
			assert.False(t, reused, "the change matters: walked again")
			assert.Equal(t, walked(t, roots), got)
		})
	}
}

// TestKeptCurrent_RaceWithAWriter: while a goroutine makes repositories
// and protected files in new directories, scans run; once it stops, the
// next scan equals a fresh walk: no change was lost between a scan's start
// and its kept result.
func TestKeptCurrent_RaceWithAWriter(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	ws := filepath.Join(base, "ws")
	build(t, base, "ws/")
	roots := []protectscan.Root{{Path: ws}}
	s := protectscan.New(protectscan.Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(halt)
	var made atomic.Int64
	wg.Go(func() {
		for i := 0; i < 3000; i++ {
			made.Store(int64(i))
			select {
			case <-stop:
				return
			default:
			}
			d := filepath.Join(ws, fmt.Sprintf("d%d/e%d", i%7, i))
			if os.MkdirAll(filepath.Join(d, ".git"), 0o755) != nil {
				return
			}
			_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.key", i)), nil, 0o644)
			if i%3 == 0 {
				_ = os.RemoveAll(filepath.Join(ws, fmt.Sprintf("d%d/e%d", i%7, i-3)))
			}
		}
	})
	// Scans while it writes: one that meets a directory removed under it
	// may fail (closed: the command would be refused), which is counted;
	// what must hold is the scan after it stops.
	scans, failed := 0, 0
	for deadline := time.Now().Add(15 * time.Second); (scans < 200 || made.Load() < 500) && time.Now().Before(deadline); scans++ {
		if _, err := s.Scan(t.Context(), roots, protectMeta); err != nil {
			failed++
		}
	}
	t.Logf("%d scans (%d failed closed) while %d repositories were made", scans, failed, made.Load())
	halt()
	got, err := s.Scan(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, walked(t, roots), got)
	assert.NotEmpty(t, got)
}

// TestKeptCurrent_EachRootSetKeptApart: two sessions' root sets (a shared
// workspace, temp areas of their own) are kept apart: a change in one
// session's temp area leaves the other's result kept.
func TestKeptCurrent_EachRootSetKeptApart(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/.git/", "t1/", "t2/")
	one := []protectscan.Root{{Path: filepath.Join(base, "ws")}, {Path: filepath.Join(base, "t1")}}
	two := []protectscan.Root{{Path: filepath.Join(base, "ws")}, {Path: filepath.Join(base, "t2")}}
	s := protectscan.New(protectscan.Options{})
	for range 2 {
		for _, roots := range [][]protectscan.Root{one, two} {
			_, err := s.Scan(t.Context(), roots, protectMeta)
			require.NoError(t, err)
		}
	}
	build(t, base, "t1/repo/.git/")
	got, reused, err := s.ScanReused(t.Context(), two, protectMeta)
	require.NoError(t, err)
	assert.True(t, reused, "t1 is not among two's roots")
	assert.Equal(t, walked(t, two), got)
	got, reused, err = s.ScanReused(t.Context(), one, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, walked(t, one), got)
}

// TestKeptCurrent_PlaceholdersComeAndGo: the runner's placeholders for a
// missing `.git` and host-run names (internal/subproc), made and removed
// around each command, neither appear in a scan nor undo the kept result;
// a directory made to look like one and then filled does.
func TestKeptCurrent_PlaceholdersComeAndGo(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/a/b/", "ws/c/.git/")
	ws := filepath.Join(base, "ws")
	roots := []protectscan.Root{{Path: ws}}
	s := protectscan.New(protectscan.Options{})
	for range 2 {
		_, err := s.Scan(t.Context(), roots, protectMeta)
		require.NoError(t, err)
	}
	for range 3 { // three commands
		var held []*subproc.Reservation
		for _, name := range []string{".git", ".hg", "x.key"} {
			h, err := subproc.Reserve(filepath.Join(ws, name), true)
			require.NoError(t, err)
			require.NotNil(t, h)
			held = append(held, h)
		}
		got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
		require.NoError(t, err)
		assert.True(t, reused, "the placeholders made for the command do not matter")
		assert.Equal(t, []string{"ws/c/.git"}, pathsOf(t, base, got))
		subproc.ReleaseAll(held...)
		_, err = os.Lstat(filepath.Join(ws, ".git"))
		require.ErrorIs(t, err, os.ErrNotExist, "released: removed")
		_, reused, err = s.ScanReused(t.Context(), roots, protectMeta)
		require.NoError(t, err)
		assert.True(t, reused, "nor does their removal")
	}

	// Shaped and marked like one, then filled: a real .git.
	fake := filepath.Join(ws, "a/.git")
	require.NoError(t, os.Mkdir(fake, 0o755))
	t.Cleanup(func() { _ = os.Chmod(fake, 0o755) }) // removable by its owner
	require.NoError(t, unix.Setxattr(fake, protectscan.PlaceholderXattr, []byte("1"), 0))
	require.NoError(t, os.Chmod(fake, 0o555))
	got, _, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, []string{"ws/c/.git"}, pathsOf(t, base, got), "empty and marked: nothing to protect yet")
	require.NoError(t, os.Chmod(fake, 0o755))
	build(t, base, "ws/a/.git/config=[core]\n")
	require.NoError(t, os.Chmod(fake, 0o555))
	got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, []string{"ws/a/.git", "ws/c/.git"}, pathsOf(t, base, got))
	assert.Equal(t, walked(t, roots), got)
}

// TestKeptCurrent_AReusedInodeNumberIsWatchedAgain: a watched directory is
// removed while the queue overflows (its removal event is lost), and a new
// directory takes its inode number; the new one must be watched for real,
// so a `.git` made in it later is in the next scan (a number once watched
// proves nothing of the directory that holds it now).
func TestKeptCurrent_AReusedInodeNumberIsWatchedAgain(t *testing.T) {
	requireNotifications(t)
	queued := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		_, _ = fmt.Sscan(string(b), &queued)
	}
	if queued > 1<<16 {
		t.Skipf("the inotify queue holds %d events: overflowing it takes too long here", queued)
	}
	base := tempRoot(t)
	old := filepath.Join(base, "old")
	build(t, base, "old/", "keep/")
	s := protectscan.New(protectscan.Options{})
	_, err := s.Scan(t.Context(), []protectscan.Root{{Path: old}}, protectMeta)
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(old, &st))

	// More events than the queue holds, then the removal (lost with them).
	f := filepath.Join(old, "f")
	for i := 0; i < queued/2+64; i++ {
		require.NoError(t, os.WriteFile(f, nil, 0o644))
		require.NoError(t, os.Remove(f))
	}
	require.NoError(t, os.Remove(old))
	// A new directory with the old one's inode number (the filesystem
	// usually hands the freed number out again at once).
	var ws string
	for i := 0; i < 200 && ws == ""; i++ {
		p := filepath.Join(base, fmt.Sprintf("new%d", i))
		require.NoError(t, os.Mkdir(p, 0o755))
		var nst unix.Stat_t
		require.NoError(t, unix.Stat(p, &nst))
		if nst.Ino == st.Ino && nst.Dev == st.Dev {
			ws = p
		}
	}
	if ws == "" {
		t.Skip("the filesystem gave the removed directory's inode number to none of 200 new ones")
	}
	roots := []protectscan.Root{{Path: ws}}
	_, err = s.Scan(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	build(t, base, filepath.Base(ws)+"/.git/")
	got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused, "the new .git is a change that matters")
	assert.Equal(t, walked(t, roots), got)
	require.NotEmpty(t, got, "the new .git is found")
}

// TestKeptCurrent_ARenameLoopIsJudgedOncePerName (issue 34): a process
// swapping two files in a loop queues the same few events thousands of
// times; the next scan judges each distinct one once (Match is asked of
// each name moved in), not once per event, and keeps its result.
func TestKeptCurrent_ARenameLoopIsJudgedOncePerName(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/a.txt=a", "ws/b.txt=b", "ws/d/.env=secret")
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	var asked atomic.Int64
	match := func(rel string, isDir bool) bool {
		asked.Add(1)
		return protectMeta(rel, isDir)
	}
	s := protectscan.New(protectscan.Options{})
	first, reused, err := s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	require.False(t, reused)
	const swaps = 2000 // 8,000 events: below the kernel's default queue (16,384)
	a, b := filepath.Join(base, "ws/a.txt"), filepath.Join(base, "ws/b.txt")
	for range swaps {
		require.NoError(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE))
	}
	asked.Store(0)
	again, reused, err := s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	assert.True(t, reused, "two files swapped change nothing protected")
	assert.Equal(t, first, again)
	assert.LessOrEqual(t, asked.Load(), int64(4), "each name moved in is judged once, not once per swap")
	got, err := os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "a", string(got), "an even number of swaps: each file back under its name")
}

// TestKeptCurrent_ARepeatQueuedDuringTheDrainIsJudged (issue 34, the
// attack review of the merged repeats): a drain reads the queue in 64 KiB
// reads and judges each read's events before the next. A `.git` made and
// removed (judged: gone), then made again between two reads of one drain,
// queues a CREATE identical to the one judged; had the last read taken
// events queued after the drain began (it read at least a whole event's
// worth, 4,113 bytes), the repeat was skipped and the result kept without
// the new `.git`. The Match callback stands in for a concurrent process
// acting between the two reads.
func TestKeptCurrent_ARepeatQueuedDuringTheDrainIsJudged(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/hook=x", "ws/a/b.key=k")
	ws := filepath.Join(base, "ws")
	roots := []protectscan.Root{{Path: ws}}
	var armed atomic.Bool
	match := func(rel string, isDir bool) bool {
		if rel == "hook" && armed.CompareAndSwap(true, false) {
			// A concurrent process, between two reads of the drain.
			if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
				panic(err)
			}
		}
		return protectMeta(rel, isDir)
	}
	s := protectscan.New(protectscan.Options{})
	_, reused, err := s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	require.False(t, reused)
	_, reused, err = s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	require.True(t, reused)

	// Every event below is 32 bytes (16 + a name padded to 16).
	git := filepath.Join(ws, ".git")
	require.NoError(t, os.Mkdir(git, 0o755))                       // CREATE|ISDIR .git
	require.NoError(t, os.Remove(git))                             // DELETE|ISDIR .git
	require.NoError(t, os.Chmod(filepath.Join(ws, "hook"), 0o600)) // ATTRIB hook
	const total = 2048 + 10                                        // one full 64 KiB read, 10 events left
	f := filepath.Join(ws, "f")
	for i := 3; i < total; i++ {
		if i%2 == 1 {
			require.NoError(t, unix.Mknod(f, unix.S_IFREG|0o644, 0)) // CREATE f
		} else {
			require.NoError(t, os.Remove(f)) // DELETE f
		}
	}
	armed.Store(true)
	_, _, err = s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	require.False(t, armed.Load(), "the hook ran")
	got, _, err := s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	_, err = os.Stat(git)
	require.NoError(t, err, "the .git is there")
	assert.Equal(t, walked(t, roots), got, "the kept result must equal a fresh walk")
}

// TestKeptCurrent_AnOverflowOfRepeatsIsNotHidden: repeated events past the
// queue's limit (16,384), then a `.git` made, whose event is lost: the
// overflow still drops the kept result.
func TestKeptCurrent_AnOverflowOfRepeatsIsNotHidden(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/a/b.key=k")
	ws := filepath.Join(base, "ws")
	roots := []protectscan.Root{{Path: ws}}
	s := protectscan.New(protectscan.Options{})
	for range 2 {
		_, err := s.Scan(t.Context(), roots, protectMeta)
		require.NoError(t, err)
	}
	git := filepath.Join(ws, ".git")
	for range 16384/2 + 64 {
		require.NoError(t, unix.Mkdir(git, 0o755))
		require.NoError(t, unix.Rmdir(git))
	}
	require.NoError(t, unix.Mkdir(git, 0o755))
	got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, walked(t, roots), got)
}

// TestKeptCurrent_AScanDuringAWalkWaitsForIt (issue 34, the first
// command): a scan of roots another scan of the same scanner is walking
// waits for that walk and takes its result, instead of walking the same
// directories again beside it (the runner's warm-up and its first command
// in a large workspace).
func TestKeptCurrent_AScanDuringAWalkWaitsForIt(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	var spec []string
	for i := range 50 {
		spec = append(spec, fmt.Sprintf("ws/d%d/f", i))
	}
	build(t, base, append(spec, "ws/a/.git/")...)
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	s := protectscan.New(protectscan.Options{})
	walking, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	match := func(rel string, dir bool) bool {
		if first.CompareAndSwap(false, true) {
			// The first scan's walk, held up at its first entry.
			close(walking)
			<-release
		}
		return protectMeta(rel, dir)
	}
	type result struct {
		entries []protectscan.Entry
		reused  bool
		err     error
	}
	firstDone, secondDone := make(chan result, 1), make(chan result, 1)
	go func() {
		e, r, err := s.ScanReused(t.Context(), roots, match)
		firstDone <- result{e, r, err}
	}()
	<-walking
	go func() {
		e, r, err := s.ScanReused(t.Context(), roots, match)
		secondDone <- result{e, r, err}
	}()
	select {
	case r := <-secondDone:
		t.Fatalf("the second scan returned while the first walked (reused %v): it walked again", r.reused)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	a, b := <-firstDone, <-secondDone
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	assert.False(t, a.reused)
	assert.True(t, b.reused, "the walk's result, kept")
	assert.Equal(t, a.entries, b.entries)
	assert.Equal(t, walked(t, roots), b.entries)
}

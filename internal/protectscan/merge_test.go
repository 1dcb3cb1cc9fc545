//go:build linux

package protectscan_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
)

// TestKeptCurrent_AChangeMergedIntoAQueuedEventIsJudged: a change made
// after the drain read a path, whose event the kernel merges
// (inotify_merge: identical to the last queued event) into an event of
// that path counted in this drain (FIONREAD) but not yet read, of another
// mask than the one that made the reading, must still be judged: the drain
// reads every queued event before it judges any, so the change's event is
// queued anew, for the next drain. Read in 64 KiB pieces, the merged event
// was judged by the stale reading ("a placeholder") and the kept result,
// without the real .vscode, was reused for good.
//
// The change is made from the Match callback (called while the drain judges
// a filler event of the first read chunk): deterministic stand-in for a
// concurrent writer racing the drain.
func TestKeptCurrent_AChangeMergedIntoAQueuedEventIsJudged(t *testing.T) {
	if ok, why := protectscan.Notifications(); !ok {
		t.Skip(why)
	}
	base := tempRoot(t)
	ws := filepath.Join(base, "ws")
	build(t, base, "ws/src/", "ws/.git/")
	ageTree(t, base)
	roots := []protectscan.Root{{Path: ws}}
	vscode := filepath.Join(ws, ".vscode")

	var armed atomic.Bool
	var fired atomic.Bool
	match := func(rel string, _ bool) bool {
		if armed.Load() && rel == "f0000000" && !fired.Swap(true) {
			// After the drain read .vscode (a placeholder): make it a
			// real directory. Its IN_ATTRIB (ws, ".vscode") merges into
			// the queued, unread last one; what is written inside it
			// raises nothing (it is not watched).
			if err := os.Chmod(vscode, 0o755); err != nil {
				panic(err)
			}
			if err := os.WriteFile(filepath.Join(vscode, "tasks.json"), []byte("{}"), 0o644); err != nil {
				panic(err)
			}
		}
		return gitOrVSCode(rel)
	}
	s := keptScanner(t, roots, match)
	_, reused, err := s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	require.True(t, reused, "kept")

	// A placeholder made and renamed into place, as the runner does.
	movePlaceholderIn(t, vscode)
	// Filler: > 64 KiB of distinct events, so the rest of the drain is
	// still in the kernel's queue while the first chunk is judged.
	manyFiles(t, ws, 4000)
	// The last queued event: IN_ATTRIB (ws, .vscode), of a placeholder
	// (its mode set again).
	require.NoError(t, os.Chmod(vscode, protectscan.PlaceholderDirMode))
	time.Sleep(10 * time.Millisecond)

	armed.Store(true)
	_, _, err = s.ScanReused(t.Context(), roots, match) // races the change: may miss it
	require.NoError(t, err)
	require.True(t, fired.Load(), "the change was made during the drain")
	// Every later scan must see it.
	got, reused, err := s.ScanReused(t.Context(), roots, match)
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(vscode, &st))
	require.Equal(t, uint32(0o755), st.Mode&0o7777, ".vscode is a real directory now")
	require.Contains(t, pathsOf(t, ws, got), ".vscode",
		"a real .vscode (holding tasks.json) exists but the scan (reused=%v) left it out", reused)
}

// TestKeptCurrent_AChangeMergedIntoARepeatIsJudged: the same merge against
// the drain's de-duplication of repeated events: the last queued event
// repeats one judged earlier in the drain and would be skipped, and the
// change merged into it never judged.
func TestKeptCurrent_AChangeMergedIntoARepeatIsJudged(t *testing.T) {
	if ok, why := protectscan.Notifications(); !ok {
		t.Skip(why)
	}
	base := tempRoot(t)
	ws := filepath.Join(base, "ws")
	stage := filepath.Join(base, "stage")
	build(t, base, "ws/src/", "ws/.git/", "stage/", "stage/evil/tasks.json={}")
	ageTree(t, base)
	roots := []protectscan.Root{{Path: ws}}
	vscode := filepath.Join(ws, ".vscode")
	var armed, fired atomic.Bool
	match := func(rel string, _ bool) bool {
		if armed.Load() && rel == "f0000000" && !fired.Swap(true) {
			// rename(2) of a directory over the empty placeholder, from
			// an unwatched directory: one IN_MOVED_TO (ws, .vscode).
			if err := unix.Rename(filepath.Join(stage, "evil"), vscode); err != nil {
				panic(err)
			}
		}
		return gitOrVSCode(rel)
	}
	s := keptScanner(t, roots, match)
	movePlaceholderIn(t, vscode)
	manyFiles(t, ws, 4000)
	require.NoError(t, os.Remove(vscode))
	movePlaceholderIn(t, vscode) // the last queued event: IN_MOVED_TO (ws, .vscode) again
	armed.Store(true)
	_, _, err := s.ScanReused(t.Context(), roots, match) // races the change
	require.NoError(t, err)
	require.True(t, fired.Load())
	got, reused, err := s.ScanReused(t.Context(), roots, match) // must see it
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(vscode, "tasks.json"))
	require.NoError(t, err)
	require.Contains(t, pathsOf(t, ws, got), ".vscode", "reused=%v", reused)
}

// movePlaceholderIn makes a runner's placeholder directory at p as the
// runner does (internal/subproc): under a temporary name beside it,
// marked, given its mode, then renamed to p (the last event: IN_MOVED_TO of
// p). Beside it, not in another directory: an ordinary user may not move a
// directory it cannot write to another parent.
func movePlaceholderIn(t *testing.T, p string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(p), protectscan.PlaceholderTempPrefix+"test")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	require.NoError(t, unix.Setxattr(tmp, protectscan.PlaceholderXattr, []byte("1"), 0))
	require.NoError(t, os.Chmod(tmp, protectscan.PlaceholderDirMode))
	require.NoError(t, os.Rename(tmp, p))
}

// gitOrVSCode is the merged-event tests' Match: `.git` and `.vscode`.
func gitOrVSCode(rel string) bool {
	b := filepath.Base(rel)
	return b == ".git" || b == ".vscode"
}

// keptScanner is a new scanner that scanned roots twice with match, so that
// it keeps the result.
func keptScanner(t *testing.T, roots []protectscan.Root, match protectscan.Match) *protectscan.Scanner {
	t.Helper()
	s := protectscan.New(protectscan.Options{})
	for range 2 {
		_, err := s.Scan(t.Context(), roots, match)
		require.NoError(t, err)
	}
	return s
}

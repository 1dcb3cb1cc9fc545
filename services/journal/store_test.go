//go:build linux

package journal_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/journal"
)

// record journals one change of the file name in dir (its prior state)
// and finishes it Applied.
func record(t *testing.T, j *journal.Journal, dir, name, session string) journal.Entry {
	t.Helper()
	require.NoError(t, j.Prepare(""))
	tx, err := j.Begin(journal.Entry{Session: session, Tool: "write", Kind: journal.Write, Paths: []string{filepath.Join(dir, name)}})
	require.NoError(t, err)
	_, err = tx.Capture(parentOf(t, dir), name, filepath.Join(dir, name))
	require.NoError(t, err)
	e, err := tx.Commit()
	require.NoError(t, err)
	require.NoError(t, j.Finish(e.ID, journal.Applied, nil))
	return e
}

// The captured state of each kind of entry, read back from the store:
// bytes, mode, owner, xattrs, mtime, a symlink's target, a tree's every
// entry, parents first, no symlink followed.
func TestCaptureKinds(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T, dir string)
		want  []journal.Node // Path relative to dir; Hash and Size of files checked against content
		files map[string][]byte
	}{
		{
			name:  "absent",
			build: func(*testing.T, string) {},
		},
		{
			name: "file with mode and xattr",
			build: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "x")
				require.NoError(t, os.WriteFile(p, []byte("bytes\r\n\x00\xff"), 0o751))
				require.NoError(t, unix.Chmod(p, 0o4751))
				if err := unix.Setxattr(p, "user.note", []byte("v1"), 0); err != nil {
					t.Logf("no user xattrs here: %v", err)
				}
			},
			want:  []journal.Node{{Path: "x", Type: journal.File, Mode: 0o4751}},
			files: map[string][]byte{"x": []byte("bytes\r\n\x00\xff")},
		},
		{
			name:  "symlink not followed",
			build: func(t *testing.T, dir string) { require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "x"))) },
			want:  []journal.Node{{Path: "x", Type: journal.Symlink, Mode: 0o777, Link: "/etc/passwd"}},
		},
		{
			name: "tree",
			build: func(t *testing.T, dir string) {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "x", "b", "c"), 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "x", "a"), []byte("A"), 0o600))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "x", "b", "c", "d"), []byte("D"), 0o640))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "x", "b", "dup"), []byte("A"), 0o600))
				require.NoError(t, os.Symlink("..", filepath.Join(dir, "x", "b", "up")))
				require.NoError(t, unix.Mkfifo(filepath.Join(dir, "x", "fifo"), 0o620))
				require.NoError(t, os.Chmod(filepath.Join(dir, "x", "fifo"), 0o620))
			},
			want: []journal.Node{
				{Path: "x", Type: journal.Dir, Mode: 0o755},
				{Path: "x/a", Type: journal.File, Mode: 0o600},
				{Path: "x/b", Type: journal.Dir, Mode: 0o700},
				{Path: "x/b/c", Type: journal.Dir, Mode: 0o700},
				{Path: "x/b/c/d", Type: journal.File, Mode: 0o640},
				{Path: "x/b/dup", Type: journal.File, Mode: 0o600},
				{Path: "x/b/up", Type: journal.Symlink, Mode: 0o777, Link: ".."},
				{Path: "x/fifo", Type: journal.Special, Mode: 0o620},
			},
			files: map[string][]byte{"x/a": []byte("A"), "x/b/c/d": []byte("D"), "x/b/dup": []byte("A")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			tc.build(t, work)
			if len(tc.want) > 0 && tc.want[0].Type == journal.Dir {
				require.NoError(t, os.Chmod(filepath.Join(work, "x"), os.FileMode(tc.want[0].Mode)))
			}
			j := open(t, filepath.Join(t.TempDir(), "j"), 1<<20, 0)
			e := record(t, j, work, "x", "s")
			got, err := j.Get(e.ID)
			require.NoError(t, err)
			require.Len(t, got.Before, len(tc.want))
			for i, w := range tc.want {
				n := got.Before[i]
				p := filepath.Join(work, w.Path)
				var st unix.Stat_t
				require.NoError(t, unix.Lstat(p, &st))
				assert.Equal(t, p, n.Path)
				assert.Equal(t, w.Type, n.Type, w.Path)
				assert.Equal(t, w.Mode, n.Mode, w.Path)
				assert.Equal(t, st.Uid, n.UID, w.Path)
				assert.Equal(t, st.Gid, n.GID, w.Path)
				assert.Equal(t, st.Mtim.Nano(), n.MTime, w.Path)
				assert.Equal(t, st.Ino, n.Ino, w.Path)
				assert.Equal(t, w.Link, n.Link, w.Path)
				if content, ok := tc.files[w.Path]; ok {
					assert.Equal(t, sum(content), n.Hash, w.Path)
					assert.Equal(t, int64(len(content)), n.Size, w.Path)
					assert.Equal(t, content, readBlob(t, j, n.Hash), w.Path)
				} else {
					assert.Empty(t, n.Hash, w.Path)
				}
				if v, err := getxattr(p, "user.note"); err == nil {
					assert.Equal(t, map[string][]byte{"user.note": v}, n.Xattrs, w.Path)
				}
			}
		})
	}
}

func getxattr(p, name string) ([]byte, error) {
	b := make([]byte, 256)
	n, err := unix.Lgetxattr(p, name, b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// A crash mid-append leaves a torn tail: the journal opens, the entries
// before it are whole, the tail is cut (logged), and the next change
// follows the last whole frame.
func TestTornTail(t *testing.T) {
	work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
	require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte("first"), 0o600))
	j := open(t, dir, 1<<20, 0)
	e1 := record(t, j, work, "a", "s")
	require.NoError(t, j.Close())
	seg := filepath.Join(dir, "seg-000001")
	whole, err := os.ReadFile(seg)
	require.NoError(t, err)
	for _, torn := range [][]byte{
		{0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 2, '{'}, // a header promising more than there is
		corrupt(whole[:50]),                             // a frame whose CRC does not match
		{1, 2, 3},                                       // less than a header
	} {
		require.NoError(t, os.WriteFile(seg, append(bytes.Clone(whole), torn...), 0o600))
		core, logs := observer.New(zap.WarnLevel)
		j2, err := journal.Open(journal.Options{Dir: dir, MaxBytes: 1 << 20, Log: zap.New(core)})
		require.NoError(t, err)
		assert.Equal(t, 1, logs.FilterMessageSnippet("torn tail").Len())
		entries, err := j2.List(journal.ListOptions{})
		require.NoError(t, err)
		require.Len(t, entries, 1)
		assert.Equal(t, e1.ID, entries[0].ID)
		assert.Equal(t, journal.Applied, entries[0].Status)
		got, err := os.ReadFile(seg)
		require.NoError(t, err)
		assert.Equal(t, whole, got, "the tail is cut at the last whole frame")
		require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte("second"), 0o600))
		e2 := record(t, j2, work, "a", "s")
		entries, err = j2.List(journal.ListOptions{})
		require.NoError(t, err)
		require.Len(t, entries, 2)
		assert.Equal(t, e2.ID, entries[1].ID)
		assert.Equal(t, []byte("second"), readBlob(t, j2, entries[1].Before[0].Hash))
		require.NoError(t, j2.Close())
		require.NoError(t, os.WriteFile(seg, whole, 0o600))
	}
}

// corrupt returns a copy of frame with one payload byte changed.
func corrupt(frame []byte) []byte {
	b := bytes.Clone(frame)
	b[20] ^= 0xff
	return b
}

// Past the cap the oldest whole segments go, with exactly their entries
// and contents: logged with their ids, listed Dropped, Get and OpenBlob
// say CodeDropped; the newest stay whole.
func TestEviction(t *testing.T) {
	work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
	core, logs := observer.New(zap.InfoLevel)
	j, err := journal.Open(journal.Options{Dir: dir, MaxBytes: 20 << 10, SegmentBytes: 4 << 10, Log: zap.New(core)})
	require.NoError(t, err)
	defer j.Close() //nolint:errcheck // test
	var entries []journal.Entry
	for i := range 30 {
		content := []byte(strings.Repeat(fmt.Sprintf("%04d", i), 256)) // 1 KiB, each distinct
		require.NoError(t, os.WriteFile(filepath.Join(work, "f"), content, 0o600))
		entries = append(entries, record(t, j, work, "f", "s"))
	}
	var total int64
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		info, err := n.Info()
		require.NoError(t, err)
		if strings.HasPrefix(n.Name(), "seg-") {
			total += info.Size()
		}
	}
	assert.LessOrEqual(t, total, int64(20<<10)+4<<10+2<<10, "within the cap plus the segment being filled")
	drops := logs.FilterMessageSnippet("dropped the oldest segment").All()
	require.NotEmpty(t, drops)
	var droppedIDs []string
	n := 0 // entries dropped
	for _, d := range drops {
		for _, f := range d.Context {
			if f.Key == "entries" {
				droppedIDs = append(droppedIDs, fmt.Sprint(f.Interface))
			}
		}
		n += len(d.ContextMap()["entries"].([]any))
	}
	// Stats (the server's metrics) say the same: the bytes on disk, the
	// entries dropped.
	assert.Equal(t, journal.Stats{Bytes: total, Dropped: int64(n)}, j.Stats())
	listed, err := j.List(journal.ListOptions{})
	require.NoError(t, err)
	byID := map[string]journal.Entry{}
	for _, e := range listed {
		byID[e.ID] = e
	}
	// Oldest first: entries forgotten (their dropped record went with a
	// later segment), then entries listed as dropped, then entries kept.
	const forgotten, dropped, kept = 0, 1, 2
	stage := forgotten
	firstKept := -1
	for i, want := range entries {
		e, ok := byID[want.ID]
		now := kept
		switch {
		case !ok:
			now = forgotten
		case e.Dropped:
			now = dropped
		}
		require.GreaterOrEqual(t, now, stage, "entry %d: only the oldest go", i)
		stage = now
		if now != kept {
			assert.Contains(t, strings.Join(droppedIDs, " "), want.ID, "the log names each dropped entry")
			_, err := j.Get(want.ID)
			var je *journal.Error
			require.True(t, errors.As(err, &je))
			if now == dropped {
				assert.Equal(t, journal.CodeDropped, je.Code)
				_, _, err = j.OpenBlob(want.Before[0].Hash)
				require.True(t, errors.As(err, &je))
				assert.Equal(t, journal.CodeDropped, je.Code)
			} else {
				assert.Equal(t, journal.CodeNotFound, je.Code)
			}
			continue
		}
		if firstKept < 0 {
			firstKept = i
		}
		content := []byte(strings.Repeat(fmt.Sprintf("%04d", i), 256))
		assert.Equal(t, content, readBlob(t, j, e.Before[0].Hash))
	}
	assert.LessOrEqual(t, firstKept, len(entries)-5, "the newest stay")
	assert.Positive(t, firstKept, "some entries were dropped")
}

// A change whose prior content alone passes the cap proceeds without its
// content (not even read): Kept false, NotKept says why, nothing stored;
// a later one is kept again.
func TestNotKept(t *testing.T) {
	work := t.TempDir()
	j := open(t, filepath.Join(t.TempDir(), "j"), 64<<10, 0)
	big := bytes.Repeat([]byte("x"), 100<<10)
	require.NoError(t, os.WriteFile(filepath.Join(work, "big"), big, 0o600))
	e := record(t, j, work, "big", "s")
	assert.False(t, e.Kept)
	assert.Equal(t, fmt.Sprintf("%d bytes, over the journal cap of %d", len(big), 64<<10), e.NotKept)
	assert.Zero(t, e.Bytes)
	assert.Empty(t, e.Before[0].Hash, "over the cap by its size: never read, so not hashed")
	assert.Equal(t, int64(len(big)), e.Before[0].Size)
	_, _, err := j.OpenBlob(sum(big))
	var je *journal.Error
	require.True(t, errors.As(err, &je))
	assert.Equal(t, journal.CodeNotFound, je.Code)
	seg, err := os.Stat(filepath.Join(j.Dir(), "seg-000001"))
	require.NoError(t, err)
	assert.Less(t, seg.Size(), int64(4<<10), "nothing of the content was stored")

	require.NoError(t, os.WriteFile(filepath.Join(work, "small"), []byte("small"), 0o600))
	e2 := record(t, j, work, "small", "s")
	assert.True(t, e2.Kept)
	assert.Equal(t, []byte("small"), readBlob(t, j, e2.Before[0].Hash))
}

// Eight goroutines on two Journal instances of one directory (as two
// processes) record changes at once: every entry is there once, whole,
// with its content; ids are unique and sorted.
func TestConcurrentWriters(t *testing.T) {
	work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
	// Segments of 512 bytes: nearly every change rolls while the other
	// writers' syncs are in flight.
	js := [2]*journal.Journal{open(t, dir, 8<<20, 512), open(t, dir, 8<<20, 512)}
	const perWriter = 25
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			j := js[w%2]
			for i := range perWriter {
				name := fmt.Sprintf("w%d-%d", w, i)
				if err := os.WriteFile(filepath.Join(work, name), []byte(name), 0o600); err != nil {
					t.Error(err)
					return
				}
				if err := j.Prepare(""); err != nil {
					t.Error(err)
					return
				}
				tx, err := j.Begin(journal.Entry{Session: fmt.Sprint(w), Tool: "write", Kind: journal.Write})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := tx.Capture(parentOf(t, work), name, filepath.Join(work, name)); err != nil {
					tx.Abort()
					t.Error(err)
					return
				}
				e, err := tx.Commit()
				if err != nil {
					t.Error(err)
					return
				}
				if err := j.Finish(e.ID, journal.Applied, nil); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, j := range js {
		entries, err := j.List(journal.ListOptions{})
		require.NoError(t, err)
		require.Len(t, entries, 8*perWriter)
		seen := map[string]bool{}
		for i, e := range entries {
			assert.False(t, seen[e.ID], "unique id %s", e.ID)
			seen[e.ID] = true
			if i > 0 {
				assert.Less(t, entries[i-1].ID, e.ID)
			}
			assert.Equal(t, journal.Applied, e.Status)
			require.Len(t, e.Before, 1)
			assert.Equal(t, []byte(filepath.Base(e.Before[0].Path)), readBlob(t, j, e.Before[0].Hash))
		}
		mine, err := j.List(journal.ListOptions{Session: "3"})
		require.NoError(t, err)
		assert.Len(t, mine, perWriter)
	}
}

// A segment swapped for a symlink (to /dev/full, say) is never followed:
// Open refuses it with CodeFailed.
func TestSegmentSymlinkRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	j, err := journal.Open(journal.Options{Dir: dir, MaxBytes: 1 << 20})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	require.NoError(t, os.Remove(filepath.Join(dir, "seg-000001")))
	require.NoError(t, os.Symlink("/dev/full", filepath.Join(dir, "seg-000001")))
	_, err = journal.Open(journal.Options{Dir: dir, MaxBytes: 1 << 20})
	var je *journal.Error
	require.True(t, errors.As(err, &je), "%v", err)
	assert.Equal(t, journal.CodeFailed, je.Code)
	assert.ErrorIs(t, err, unix.ELOOP)
}

// A change may not push out an earlier change of its own session: past
// the cap, Prepare for that session refuses with CodeFull, naming the
// entry, and nothing is dropped or appended; the session's entries stay
// whole with their contents. Prepare for another session (or none) drops
// them, and List says Dropped, status dropped.
func TestEvictionKeepsTheSessionsChanges(t *testing.T) {
	tests := []struct {
		name     string
		later    string // the session of the changes after the first
		wantFull bool
	}{
		{"the same session is refused", "s1", true},
		{"another session drops it", "s2", false},
		{"no session drops it", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
			j, err := journal.Open(journal.Options{Dir: dir, MaxBytes: 20 << 10, SegmentBytes: 4 << 10})
			require.NoError(t, err)
			defer j.Close() //nolint:errcheck // test
			first := []byte(strings.Repeat("first ", 1000))
			require.NoError(t, os.WriteFile(filepath.Join(work, "f"), first, 0o600))
			e0 := record(t, j, work, "f", "s1")
			var full error
			for i := range 40 {
				require.NoError(t, os.WriteFile(filepath.Join(work, "f"), []byte(strings.Repeat(fmt.Sprintf("%04d", i), 1024)), 0o600))
				if full = j.Prepare(tt.later); full != nil {
					break
				}
				tx, err := j.Begin(journal.Entry{Session: tt.later, Tool: "write", Kind: journal.Write, Paths: []string{filepath.Join(work, "f")}})
				require.NoError(t, err)
				_, err = tx.Capture(parentOf(t, work), "f", filepath.Join(work, "f"))
				require.NoError(t, err)
				e, err := tx.Commit()
				require.NoError(t, err)
				require.NoError(t, j.Finish(e.ID, journal.Applied, nil))
				if _, err := j.Get(e0.ID); err != nil {
					break // dropped
				}
			}
			got, err := j.Get(e0.ID)
			if !tt.wantFull {
				var je *journal.Error
				require.True(t, errors.As(err, &je), "%v", err)
				assert.Equal(t, journal.CodeDropped, je.Code)
				assert.True(t, got.Dropped)
				assert.Equal(t, journal.Dropped, got.Status)
				if tt.later == "" {
					require.NoError(t, full, "a change of no session is never refused")
				}
				return
			}
			var je *journal.Error
			require.True(t, errors.As(full, &je), "%v", full)
			assert.Equal(t, journal.CodeFull, je.Code)
			assert.Contains(t, je.Error(), e0.ID)
			require.NoError(t, err)
			assert.Equal(t, journal.Applied, got.Status)
			assert.Equal(t, first, readBlob(t, j, got.Before[0].Hash))
			// Refused again, with nothing appended meanwhile.
			before, err := j.List(journal.ListOptions{})
			require.NoError(t, err)
			sizes := segSizes(t, dir)
			require.Error(t, j.Prepare("s1"))
			after, err := j.List(journal.ListOptions{})
			require.NoError(t, err)
			assert.Equal(t, before, after)
			assert.Equal(t, sizes, segSizes(t, dir))
			require.NoError(t, j.Prepare("s2"), "another session's change makes room")
			got, err = j.Get(e0.ID)
			require.Error(t, err)
			assert.Equal(t, journal.Dropped, got.Status)
		})
	}
}

// segSizes returns the size of each segment file in dir, by name.
func segSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, n := range names {
		if strings.HasPrefix(n.Name(), "seg-") {
			info, err := n.Info()
			require.NoError(t, err)
			out[n.Name()] = info.Size()
		}
	}
	return out
}

// dirBytes is the sum of the sizes of every file in dir: what the journal
// holds on disk.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var total int64
	for _, n := range names {
		info, err := n.Info()
		require.NoError(t, err)
		total += info.Size()
	}
	return total
}

// TestCapHoldsBeforeEveryChange sums the journal directory's files around
// each of a sequence of changes (each of its own session, so the oldest
// may go): before each change (after its Prepare) the total is within the
// cap, whatever the segment being filled holds, and after it the total
// passes the cap by at most that change's own bytes. Segment sizes that do
// not divide the cap, and changes of several sizes, put the roll at every
// point relative to the cap.
func TestCapHoldsBeforeEveryChange(t *testing.T) {
	cases := []struct {
		name               string
		maxBytes, segBytes int64
		sizes              []int // bytes of prior content per change, cycled
	}{
		{"1 KiB changes, 4 KiB segments, 20 KiB cap", 20 << 10, 4 << 10, []int{1 << 10}},
		{"mixed changes, 7 KiB segments, 30 KiB cap", 30 << 10, 7 << 10, []int{300, 2 << 10, 5000, 100}},
		{"changes near a segment, 3 KiB segments, 16 KiB cap", 16 << 10, 3 << 10, []int{2900, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
			j, err := journal.Open(journal.Options{Dir: dir, MaxBytes: tc.maxBytes, SegmentBytes: tc.segBytes})
			require.NoError(t, err)
			defer j.Close() //nolint:errcheck // test
			var passed int
			for i := range 80 {
				size := tc.sizes[i%len(tc.sizes)]
				content := []byte(strings.Repeat(fmt.Sprintf("%05d", i), size/5+1))[:size]
				require.NoError(t, os.WriteFile(filepath.Join(work, "f"), content, 0o600))
				session := fmt.Sprintf("s%d", i)
				require.NoError(t, j.Prepare(session))
				before := dirBytes(t, dir)
				require.LessOrEqual(t, before, tc.maxBytes, "change %d: the total before it is within the cap", i)
				tx, err := j.Begin(journal.Entry{Session: session, Tool: "write", Kind: journal.Write, Paths: []string{filepath.Join(work, "f")}})
				require.NoError(t, err)
				_, err = tx.Capture(parentOf(t, work), "f", filepath.Join(work, "f"))
				require.NoError(t, err)
				e, err := tx.Commit()
				require.NoError(t, err)
				require.NoError(t, j.Finish(e.ID, journal.Applied, nil))
				after := dirBytes(t, dir)
				// The change's own frames: its content, entry and outcome.
				own := after - before
				assert.LessOrEqual(t, own, int64(size)+2<<10, "change %d appended only its own frames", i)
				if after > tc.maxBytes {
					passed++
					assert.LessOrEqual(t, after, tc.maxBytes+own, "change %d: past the cap by at most its own bytes", i)
				}
			}
			// The cap was reached, so eviction was exercised.
			assert.Positive(t, passed)
		})
	}
}

// OpenDir makes the directory and its lock file and reads nothing: a torn
// tail stays on disk until the first Prepare cuts it, a new journal has no
// segment until then, and a directory that cannot be made is a *Error with
// CodeFailed that makes nothing.
func TestOpenDirDefersTheRest(t *testing.T) {
	t.Run("a torn tail waits for Prepare", func(t *testing.T) {
		work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
		require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte("first"), 0o600))
		j := open(t, dir, 1<<20, 0)
		record(t, j, work, "a", "s")
		require.NoError(t, j.Close())
		seg := filepath.Join(dir, "seg-000001")
		whole, err := os.ReadFile(seg)
		require.NoError(t, err)
		torn := append(bytes.Clone(whole), 1, 2, 3)
		require.NoError(t, os.WriteFile(seg, torn, 0o600))

		core, logs := observer.New(zap.WarnLevel)
		j2, err := journal.OpenDir(journal.Options{Dir: dir, MaxBytes: 1 << 20, Log: zap.New(core)})
		require.NoError(t, err)
		got, err := os.ReadFile(seg)
		require.NoError(t, err)
		assert.Equal(t, torn, got, "OpenDir reads no segment")
		assert.Zero(t, logs.Len())

		require.NoError(t, j2.Prepare(""))
		got, err = os.ReadFile(seg)
		require.NoError(t, err)
		assert.Equal(t, whole, got, "the first Prepare cuts the tail")
		assert.Equal(t, 1, logs.FilterMessageSnippet("torn tail").Len())
		require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte("second"), 0o600))
		record(t, j2, work, "a", "s")
		entries, err := j2.List(journal.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, entries, 2)
		require.NoError(t, j2.Close())
	})
	t.Run("a new journal has its lock and no segment", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "j")
		j, err := journal.OpenDir(journal.Options{Dir: dir, MaxBytes: 1 << 20})
		require.NoError(t, err)
		names, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, names, 1)
		assert.Equal(t, "lock", names[0].Name())
		require.NoError(t, j.Close())
	})
	t.Run("a directory that cannot be made", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(parent, []byte("x"), 0o600))
		_, err := journal.OpenDir(journal.Options{Dir: filepath.Join(parent, "j"), MaxBytes: 1 << 20})
		je, ok := errors.AsType[*journal.Error](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, journal.CodeFailed, je.Code)
		got, err := os.ReadFile(parent)
		require.NoError(t, err)
		assert.Equal(t, "x", string(got))
	})
}

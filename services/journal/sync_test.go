//go:build linux

package journal_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/journal"
)

// stage journals the prior state of the file name in dir up to Stage and
// returns the staged entry and its Sync, not started.
func stage(t *testing.T, j *journal.Journal, dir, name string) (journal.Entry, *journal.Sync) {
	t.Helper()
	require.NoError(t, j.Prepare(""))
	tx, err := j.Begin(journal.Entry{Session: "s", Tool: "write", Kind: journal.Write, Paths: []string{filepath.Join(dir, name)}})
	require.NoError(t, err)
	_, err = tx.Capture(parentOf(t, dir), name, filepath.Join(dir, name))
	require.NoError(t, err)
	e, s, err := tx.Stage()
	require.NoError(t, err)
	return e, s
}

// A staged entry's Sync outlives the segment's descriptor being let go
// (a roll by Prepare, the journal's Close): it syncs, and the entry stays
// whole and is not marked failed.
func TestSyncOutlivesRoll(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release func(t *testing.T, j *journal.Journal, work string)
	}{
		{"a roll by Prepare", func(t *testing.T, j *journal.Journal, _ string) { require.NoError(t, j.Prepare("")) }},
		{"a roll by the next change", func(t *testing.T, j *journal.Journal, work string) { record(t, j, work, "b", "s") }},
		{"Close", func(t *testing.T, j *journal.Journal, _ string) { require.NoError(t, j.Close()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
			require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte("before a"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(work, "b"), []byte("before b"), 0o600))
			j := open(t, dir, 8<<20, 1) // every change rolls
			e, s := stage(t, j, work, "a")
			tc.release(t, j, work)
			require.NoError(t, s.Wait())
			require.NoError(t, s.Wait(), "the same outcome again")

			r := open(t, dir, 8<<20, 1)
			got, err := r.Get(e.ID)
			require.NoError(t, err)
			assert.Equal(t, journal.Pending, got.Status, "not marked failed")
			require.Len(t, got.Before, 1)
			assert.Equal(t, []byte("before a"), readBlob(t, r, got.Before[0].Hash))
			n, err := r.Check()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, n, 1)
		})
	}
}

// Eviction never drops a segment a Sync is still syncing, in this
// process or another: the cap waits until the Sync is done.
func TestEvictionSparesPendingSync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other bool // the evicting journal is a second instance on the dir
	}{
		{"same journal", false},
		{"second journal on the dir", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
			content := make([]byte, 4<<10)
			require.NoError(t, os.WriteFile(filepath.Join(work, "a"), content, 0o600))
			const maxBytes = 16 << 10
			j := open(t, dir, maxBytes, 1)
			ev := j
			if tc.other {
				ev = open(t, dir, maxBytes, 1)
			}
			e, s := stage(t, j, work, "a")
			seg := segmentsOf(t, dir)[0]
			for i := range 12 { // far past the cap: each change is a segment of 4 KiB and more
				name := fmt.Sprint("f", i)
				require.NoError(t, os.WriteFile(filepath.Join(work, name), append([]byte(name), content...), 0o600))
				record(t, ev, work, name, "other")
			}
			assert.FileExists(t, filepath.Join(dir, seg), "the pending Sync's segment is kept")
			got, err := ev.Get(e.ID)
			require.NoError(t, err, "not dropped while its Sync is pending")
			assert.Equal(t, content, readBlob(t, ev, got.Before[0].Hash))

			require.NoError(t, s.Wait())
			require.NoError(t, ev.Prepare(""))
			assert.NoFileExists(t, filepath.Join(dir, seg), "dropped once the Sync is done")
			_, err = ev.Get(e.ID)
			var je *journal.Error
			require.ErrorAs(t, err, &je)
			assert.Equal(t, journal.CodeDropped, je.Code)
		})
	}
}

func segmentsOf(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "seg-*"))
	require.NoError(t, err)
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// Many writers on two journals of one directory, segments so small that
// nearly every change rolls, syncs staged and started after other writers
// ran, and a cap that drops old segments all along: no change fails, and
// each entry is whole (its content readable) or said to be dropped.
func TestConcurrentRollsAndEviction(t *testing.T) {
	work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
	js := [2]*journal.Journal{open(t, dir, 32<<10, 512), open(t, dir, 32<<10, 512)}
	p := parentOf(t, work)
	const writers, perWriter = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			j := js[w%2]
			for i := range perWriter {
				name := fmt.Sprintf("w%d-%d", w, i)
				if err := os.WriteFile(filepath.Join(work, name), []byte(name), 0o600); err != nil {
					t.Error(err)
					return
				}
				if err := stageWaitFinish(j, p, work, name); err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	entries, err := js[0].List(journal.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		if e.Dropped {
			continue
		}
		assert.Equal(t, journal.Applied, e.Status, e.ID)
		require.Len(t, e.Before, 1)
		assert.Equal(t, []byte(filepath.Base(e.Before[0].Path)), readBlob(t, js[0], e.Before[0].Hash))
	}
	_, err = js[1].Check()
	require.NoError(t, err)
}

// stageWaitFinish records the prior state of name as fsbackend does:
// Stage, let other writers run (and roll), Start, Wait, Finish.
func stageWaitFinish(j *journal.Journal, p *dirfd.Parent, work, name string) error {
	if err := j.Prepare(""); err != nil {
		return err
	}
	tx, err := j.Begin(journal.Entry{Session: "s", Tool: "write", Kind: journal.Write})
	if err != nil {
		return err
	}
	if _, err := tx.Capture(p, name, filepath.Join(work, name)); err != nil {
		tx.Abort()
		return err
	}
	e, s, err := tx.Stage()
	if err != nil {
		return err
	}
	runtime.Gosched()
	s.Start()
	runtime.Gosched()
	if err := s.Wait(); err != nil {
		return err
	}
	return j.Finish(e.ID, journal.Applied, nil)
}

// A journal whose segment another journal on the directory dropped (past
// the cap) between its Prepare and its Begin moves to the newest segment:
// the change is recorded whole, and its outcome too.
func TestBeginAfterSegmentDroppedByOther(t *testing.T) {
	work, dir := t.TempDir(), filepath.Join(t.TempDir(), "j")
	content := make([]byte, 4<<10)
	require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte("before a"), 0o600))
	a, b := open(t, dir, 16<<10, 1), open(t, dir, 16<<10, 1)
	require.NoError(t, a.Prepare(""))
	seg := segmentsOf(t, dir)[0]
	for i := range 8 {
		name := fmt.Sprint("f", i)
		require.NoError(t, os.WriteFile(filepath.Join(work, name), append([]byte(name), content...), 0o600))
		record(t, b, work, name, "other")
	}
	require.NoFileExists(t, filepath.Join(dir, seg), "a's segment was dropped by b")

	tx, err := a.Begin(journal.Entry{Session: "a", Tool: "write", Kind: journal.Write})
	require.NoError(t, err)
	_, err = tx.Capture(parentOf(t, work), "a", filepath.Join(work, "a"))
	require.NoError(t, err)
	e, err := tx.Commit()
	require.NoError(t, err)
	require.NoError(t, a.Finish(e.ID, journal.Applied, nil))

	got, err := b.Get(e.ID)
	require.NoError(t, err)
	assert.Equal(t, journal.Applied, got.Status)
	assert.Equal(t, []byte("before a"), readBlob(t, b, got.Before[0].Hash))
}

// After Close, Prepare, Begin and Finish fail with CodeFailed (no closed
// descriptor used), and a second Close does nothing.
func TestClosedJournal(t *testing.T) {
	j := open(t, filepath.Join(t.TempDir(), "j"), 8<<20, 0)
	require.NoError(t, j.Close())
	require.NoError(t, j.Close())
	for name, call := range map[string]func() error{
		"Prepare": func() error { return j.Prepare("s") },
		"Begin":   func() error { _, err := j.Begin(journal.Entry{Kind: journal.Write}); return err },
		"Finish":  func() error { return j.Finish("x", journal.Applied, nil) },
	} {
		err := call()
		var je *journal.Error
		require.ErrorAs(t, err, &je, name)
		assert.Equal(t, journal.CodeFailed, je.Code, name)
		assert.Contains(t, je.Error(), "closed", name)
	}
}

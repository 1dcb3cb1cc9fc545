//go:build linux

package undo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/journal"
)

// partialTree builds tree/ with 50 files (modes 0600 to 0755, some of
// 5 KiB) in nested directories (one 0750) and a symlink.
func partialTree(w *ws) {
	specs := []string{"tree/"}
	for d := range 5 {
		specs = append(specs, fmt.Sprintf("tree/d%d/", d), fmt.Sprintf("tree/d%d/sub/", d))
	}
	for i := range 50 {
		body := fmt.Sprintf("file %d\n", i)
		if i%7 == 0 {
			body = strings.Repeat(body, 512)
		}
		specs = append(specs, treeFile(i)+": "+body)
	}
	specs = append(specs, "tree/d0/link => ../d1/sub")
	w.build(specs...)
	modes := []os.FileMode{0o600, 0o640, 0o644, 0o755, 0o444}
	for i := range 50 {
		require.NoError(w.t, os.Chmod(w.path(treeFile(i)), modes[i%len(modes)]))
	}
	require.NoError(w.t, os.Chmod(w.path("tree/d2/sub"), 0o750))
}

// treeFile is the path of the file i of partialTree: in d<i%5>, odd ones
// in its sub/.
func treeFile(i int) string {
	if i%2 == 1 {
		return fmt.Sprintf("tree/d%d/sub/f%02d", i%5, i)
	}
	return fmt.Sprintf("tree/d%d/f%02d", i%5, i)
}

// pendingDelete journals the recursive delete of rel through the store
// and leaves it pending, as a process killed mid-removal does: the prior
// tree and its content captured and durable, the state it was to leave
// (nothing) recorded, never finished.
func (w *ws) pendingDelete(rel string) journal.Entry {
	w.t.Helper()
	p := w.path(rel)
	require.NoError(w.t, w.j.Prepare(""))
	tx, err := w.j.Begin(journal.Entry{Session: "s1", Tool: "delete", Kind: journal.Delete, Paths: []string{p}})
	require.NoError(w.t, err)
	par, base, err := openParent(p)
	require.NoError(w.t, err)
	_, err = tx.Capture(par, base, p)
	require.NoError(w.t, par.Close())
	require.NoError(w.t, err)
	tx.SetAfter(nil)
	e, err := tx.Commit()
	require.NoError(w.t, err)
	require.True(w.t, e.Kept)
	return e
}

// removePart removes what a recursive delete killed part-way leaves
// removed: every third file of d0 to d2 and the whole of d3.
func removePart(w *ws) {
	for i := 0; i < 50; i += 3 {
		if i%5 <= 2 {
			require.NoError(w.t, os.Remove(w.path(treeFile(i))))
		}
	}
	require.NoError(w.t, os.RemoveAll(w.path("tree/d3")))
}

// inodes returns the inode of every regular file beneath the root.
func inodes(w *ws) map[string]uint64 {
	out := map[string]uint64{}
	require.NoError(w.t, filepath.Walk(w.root, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		var st unix.Stat_t
		require.NoError(w.t, unix.Lstat(p, &st))
		out[p] = st.Ino
		return nil
	}))
	return out
}

// A change a crash left pending part-way (a recursive delete killed in the
// middle of the tree, its top directory still there) is judged node by
// node: undo restores exactly the missing entries (bytes, mode, owner,
// mtime) and leaves those still there alone; nothing removed is nothing
// to undo; an entry in neither state is a later change. An applied delete
// whose tree is partly back needs --force.
func TestUndo_PartialRecursiveDelete(t *testing.T) {
	cases := []struct {
		name    string
		applied bool                      // finished applied (the tree gone), else left pending
		disk    func(w *ws)               // the disk after the change
		first   errcode.Code              // the undo without --force: its refusal, "" when it undoes
		forced  bool                      // then with --force
		session bool                      // undone as a session
		check   func(t *testing.T, w *ws) // more, before the tree is compared
	}{
		{name: "pending, part removed: restored", disk: removePart},
		{name: "pending, part removed: restored by a session undo", disk: removePart, session: true},
		{name: "pending, the whole tree removed: restored", disk: func(w *ws) {
			require.NoError(w.t, os.RemoveAll(w.path("tree")))
		}},
		{name: "pending, nothing removed: nothing to undo, even forced", disk: func(*ws) {}, first: CodeNothingToUndo, forced: true},
		{name: "pending, part removed and a file rewritten: a later change, forced", disk: func(w *ws) {
			removePart(w)
			replaceFile(w.t, w.path("tree/d4/f04"), "later")
		}, first: CodeChangedSince, forced: true},
		{name: "pending, part removed and a file added: restored, the new file left", disk: func(w *ws) {
			removePart(w)
			require.NoError(w.t, os.WriteFile(w.path("tree/d1/new"), []byte("x"), 0o644))
		}, check: func(t *testing.T, w *ws) {
			assert.Equal(t, "x", string(must(os.ReadFile(w.path("tree/d1/new")))), "an entry the change never had is not removed")
			require.NoError(t, os.Remove(w.path("tree/d1/new")))
		}},
		{name: "applied, part of the tree left: changed since, forced", applied: true, disk: removePart, first: CodeChangedSince, forced: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWS(t)
			partialTree(w)
			prior := w.snap()
			require.Len(t, inodes(w), 50)
			e := w.pendingDelete("tree")
			if tc.applied {
				require.NoError(t, w.j.Finish(e.ID, journal.Applied, nil))
			}
			tc.disk(w)
			left := inodes(w)
			now := w.snap()

			undo := func(force bool) error {
				if tc.session {
					res, err := w.u.UndoSession(ctx(), "s1", Options{Force: force})
					if err == nil {
						require.Len(t, res.Undone, 1, "skipped: %+v", res.Skipped)
					}
					return err
				}
				_, err := w.u.Undo(ctx(), e.ID, Options{Force: force})
				return err
			}
			err := undo(false)
			if tc.first != "" {
				require.Equal(t, tc.first, code(err), "%v", err)
				assert.Equal(t, now, w.snap(), "a refusal changes nothing")
				if !tc.forced {
					return
				}
				err = undo(true)
				if tc.first == CodeNothingToUndo {
					assert.Equal(t, CodeNothingToUndo, code(err), "%v", err)
					assert.Equal(t, prior, w.snap())
					return
				}
			}
			require.NoError(t, err)
			after := inodes(w)
			if tc.check != nil {
				tc.check(t, w)
			}
			assert.Equal(t, prior, w.snap(), "restored byte for byte, with modes, owners and mtimes")
			for p, ino := range left {
				if strings.HasSuffix(p, "/d4/f04") {
					continue // rewritten later: restored
				}
				assert.Equal(t, ino, after[p], "%s was in its prior state: left alone", p)
			}
		})
	}
}

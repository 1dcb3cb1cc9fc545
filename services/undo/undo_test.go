//go:build linux

package undo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/journal"
)

// otherUID is the owner a root test gives its files first, to see undo
// give it back.
const otherUID = 1000

// ws is a workspace and a journal, with the undoer under test.
type ws struct {
	t    *testing.T
	root string
	j    *journal.Journal
	u    *Undoer
}

func newWS(t *testing.T) *ws {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	j, err := journal.Open(journal.Options{Dir: filepath.Join(t.TempDir(), "journal"), MaxBytes: 64 << 20, Sync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return &ws{t: t, root: root, j: j, u: New(j)}
}

func (w *ws) path(rel string) string { return filepath.Join(w.root, rel) }

// build makes the fixture entries and, as root, gives every entry to
// otherUID so that restoring the owner is seen.
func (w *ws) build(specs ...string) {
	w.t.Helper()
	fixture.Build(w.t, w.root, specs...)
	if os.Geteuid() != 0 {
		return
	}
	for _, s := range specs {
		name, _, _ := strings.Cut(s, " => ")
		name, _, _ = strings.Cut(name, ": ")
		require.NoError(w.t, os.Lchown(w.path(strings.TrimSuffix(name, "/")), otherUID, otherUID))
	}
}

// change journals the agent's change fn of kind to paths as the file
// backend does: the prior state captured and durable before fn runs,
// the state it left recorded after.
func (w *ws) change(session string, kind journal.Kind, fn func(), rels ...string) journal.Entry {
	w.t.Helper()
	paths := make([]string, len(rels))
	for i, r := range rels {
		paths[i] = w.path(r)
	}
	require.NoError(w.t, w.j.Prepare(""))
	tx, err := w.j.Begin(journal.Entry{Session: session, Tool: string(kind), Kind: kind, Paths: paths})
	require.NoError(w.t, err)
	for i, p := range paths {
		capture := tx.Capture
		if kind == journal.Move && i == 0 {
			capture = tx.CaptureNode // as the file backend: a moved entry moves whole
		}
		par, base, err := openParent(p)
		require.NoError(w.t, err)
		_, err = capture(par, base, p)
		require.NoError(w.t, par.Close())
		require.NoError(w.t, err)
	}
	e, err := tx.Commit()
	require.NoError(w.t, err)
	fn()
	var after []journal.Node
	for _, p := range paths {
		n, err := lookNode(p)
		require.NoError(w.t, err)
		if n != nil {
			after = append(after, *n)
		}
	}
	require.NoError(w.t, w.j.Finish(e.ID, journal.Applied, after))
	e.After, e.Status = after, journal.Applied
	return e
}

// snap describes every entry beneath the root but the root: type, mode,
// owner, a file's bytes, mtime and extended attributes, a link's target.
func (w *ws) snap() map[string]string {
	w.t.Helper()
	out := map[string]string{}
	require.NoError(w.t, filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == w.root {
			return err
		}
		var st unix.Stat_t
		require.NoError(w.t, unix.Lstat(p, &st))
		desc := fmt.Sprintf("%o %d:%d", st.Mode, st.Uid, st.Gid)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			require.NoError(w.t, err)
			desc += fmt.Sprintf(" mtime=%d %q xattr=%q", st.Mtim.Nano(), b, xattrsOf(w.t, p))
		case unix.S_IFLNK:
			l, err := os.Readlink(p)
			require.NoError(w.t, err)
			desc += " -> " + l
		case unix.S_IFDIR:
			desc += fmt.Sprintf(" xattr=%q", xattrsOf(w.t, p))
		}
		out[strings.TrimPrefix(p, w.root+"/")] = desc
		return nil
	}))
	return out
}

// xattrsOf is the extended attributes of the entry at p, not following a
// final symlink.
func xattrsOf(t *testing.T, p string) map[string][]byte {
	t.Helper()
	d, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer func() { _ = unix.Close(d) }()
	return dirfd.XattrsAt(d, filepath.Base(p))
}

// code returns the code of an *Error, "" when err is not one.
func code(err error) errcode.Code {
	if ue, ok := errors.AsType[*Error](err); ok {
		return ue.Code
	}
	return ""
}

// setXattr sets user.<name> on p, and reports false (with the reason)
// when the filesystem does not take user extended attributes.
func setUserXattr(t *testing.T, p, name, val string) bool {
	t.Helper()
	err := unix.Lsetxattr(p, "user."+name, []byte(val), 0)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM) {
		t.Logf("user extended attributes unsupported here (%v): not checked", err)
		return false
	}
	require.NoError(t, err)
	return true
}

// replaceFile publishes content at p as a write tool does: a new file
// renamed over it (a new inode, the process's own owner, mode 0644, no
// extended attributes).
func replaceFile(t *testing.T, p, content string) {
	t.Helper()
	tmp := p + ".new"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Chmod(tmp, 0o644))
	require.NoError(t, os.Rename(tmp, p))
}

func ctx() context.Context { return context.Background() }

// Each kind of change, undone, leaves the disk exactly as before it:
// bytes, mode, owner, mtime, extended attributes, links, empty
// directories.
func TestUndo_RestoresEachKindOfChange(t *testing.T) {
	cases := []struct {
		name  string
		kind  journal.Kind
		tree  []string
		xattr string // a file given user.k before the change
		paths []string
		do    func(w *ws)
	}{
		{
			name: "overwrite restores bytes, mode, owner, xattrs and mtime", kind: journal.Write,
			tree: []string{"a.txt: one\n"}, xattr: "a.txt", paths: []string{"a.txt"},
			do: func(w *ws) { replaceFile(w.t, w.path("a.txt"), "two\n") },
		},
		{
			name: "edit restores the file it edited", kind: journal.Edit,
			tree: []string{"src/main.go: package main\nfunc f() {}\n"}, xattr: "src/main.go", paths: []string{"src/main.go"},
			do: func(w *ws) { replaceFile(w.t, w.path("src/main.go"), "package main\nfunc g() {}\n") },
		},
		{
			name: "a write that created a file is undone by deleting it", kind: journal.Write,
			tree: []string{"d/"}, paths: []string{"d/new.txt"},
			do: func(w *ws) { require.NoError(w.t, os.WriteFile(w.path("d/new.txt"), []byte("new"), 0o600)) },
		},
		{
			name: "mkdir is undone by removing the empty directory", kind: journal.Mkdir,
			tree: []string{"d/"}, paths: []string{"d/made"},
			do: func(w *ws) { require.NoError(w.t, os.Mkdir(w.path("d/made"), 0o755)) },
		},
		{
			name: "a moved file moves back, the same inode", kind: journal.Move,
			tree: []string{"a.txt: moved", "to/"}, xattr: "a.txt", paths: []string{"a.txt", "to/b.txt"},
			do: func(w *ws) { require.NoError(w.t, os.Rename(w.path("a.txt"), w.path("to/b.txt"))) },
		},
		{
			name: "a moved directory moves back with its tree", kind: journal.Move,
			tree: []string{"pkg/a.go: a", "pkg/sub/b.go: b", "pkg/empty/"}, paths: []string{"pkg", "lib"},
			do: func(w *ws) { require.NoError(w.t, os.Rename(w.path("pkg"), w.path("lib"))) },
		},
		{
			name: "a move that replaced a file restores both", kind: journal.Move,
			tree: []string{"a.txt: source", "b.txt: victim"}, xattr: "b.txt", paths: []string{"a.txt", "b.txt"},
			do: func(w *ws) { require.NoError(w.t, os.Rename(w.path("a.txt"), w.path("b.txt"))) },
		},
		{
			name: "a recursive delete restores the tree: symlinks, empty dirs, modes", kind: journal.Delete,
			tree: []string{
				"src/main.go: package main", "src/run.sh: #!/bin/sh", "src/lib/util.go: package lib",
				"src/empty/", "src/private/", "src/private/key: secret", "src/rel => main.go",
				"src/abs => /etc/hostname", "src/dangling => nowhere", "src/lib/up => ../main.go",
			},
			xattr: "src/lib/util.go", paths: []string{"src"},
			do: func(w *ws) { require.NoError(w.t, os.RemoveAll(w.path("src"))) },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWS(t)
			w.build(c.tree...)
			if c.kind == journal.Delete {
				require.NoError(t, os.Chmod(w.path("src/run.sh"), 0o755))
				require.NoError(t, os.Chmod(w.path("src/private/key"), 0o600))
				require.NoError(t, os.Chmod(w.path("src/private"), 0o700))
				require.NoError(t, os.Chmod(w.path("src/empty"), 0o750))
			}
			if c.xattr != "" {
				setUserXattr(t, w.path(c.xattr), "k", "v\x00bin")
			}
			var inode uint64
			if c.kind == journal.Move {
				var st unix.Stat_t
				require.NoError(t, unix.Lstat(w.path(c.paths[0]), &st))
				inode = st.Ino
			}
			// A past mtime, which a restore must bring back.
			for _, p := range c.paths {
				_ = os.Chtimes(w.path(p), time.Unix(1_600_000_000, 0), time.Unix(1_600_000_000, 123))
			}
			want := w.snap()
			e := w.change("s1", c.kind, func() { c.do(w) }, c.paths...)
			require.NotEqual(t, want, w.snap(), "the change changed something")

			done, err := w.u.Undo(ctx(), e.ID, Options{})
			require.NoError(t, err)
			assert.Equal(t, want, w.snap(), "every entry back as it was")
			assert.Equal(t, e.ID, done.Entry.ID)
			assert.Equal(t, journal.Undo, done.Undo.Kind)
			assert.Equal(t, e.ID, done.Undo.Undoes)
			assert.Equal(t, journal.Applied, done.Undo.Status)
			if c.kind == journal.Move {
				var st unix.Stat_t
				require.NoError(t, unix.Lstat(w.path(c.paths[0]), &st))
				assert.Equal(t, inode, st.Ino, "moved back, not copied")
			}
			if c.kind == journal.Delete {
				fi, err := os.Stat(w.path("src/empty"))
				require.NoError(t, err)
				assert.Equal(t, time.Unix(1_600_000_000, 123).UnixNano(), statMtime(t, w.path("src")), "the tree's root keeps its mtime")
				assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
			}
			all, err := w.j.List(journal.ListOptions{})
			require.NoError(t, err)
			assert.Equal(t, done.Undo.ID, UndoneBy(all)[e.ID], "history says who undid it")

			_, err = w.u.Undo(ctx(), e.ID, Options{})
			assert.Equal(t, CodeAlreadyUndone, code(err), "%v", err)
		})
	}
}

func statMtime(t *testing.T, p string) int64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return st.Mtim.Nano()
}

// An undo is journaled: undoing it brings the change back, and undoing
// that restores the prior state again, for each kind.
func TestUndo_OfAnUndo(t *testing.T) {
	cases := []struct {
		name  string
		kind  journal.Kind
		tree  []string
		paths []string
		do    func(w *ws)
	}{
		{"overwrite", journal.Write, []string{"a.txt: one"}, []string{"a.txt"}, func(w *ws) { replaceFile(w.t, w.path("a.txt"), "two") }},
		{"create", journal.Write, nil, []string{"new.txt"}, func(w *ws) { require.NoError(w.t, os.WriteFile(w.path("new.txt"), []byte("n"), 0o640)) }},
		{"move", journal.Move, []string{"a/x: x"}, []string{"a", "b"}, func(w *ws) { require.NoError(w.t, os.Rename(w.path("a"), w.path("b"))) }},
		{"recursive delete", journal.Delete, []string{"t/x: x", "t/u/y: y", "t/l => x"}, []string{"t"}, func(w *ws) { require.NoError(w.t, os.RemoveAll(w.path("t"))) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWS(t)
			w.build(c.tree...)
			prior := w.snap()
			e := w.change("s1", c.kind, func() { c.do(w) }, c.paths...)
			changed := w.snap()

			u1, err := w.u.Undo(ctx(), e.ID, Options{})
			require.NoError(t, err)
			assert.Equal(t, prior, w.snap())

			u2, err := w.u.Undo(ctx(), u1.Undo.ID, Options{})
			require.NoError(t, err, "the undo can be undone")
			assert.Equal(t, changed, w.snap(), "the change is back")
			all, err := w.j.List(journal.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, UndoneBy(all)[e.ID], "undoing the undo brings the change back")

			_, err = w.u.Undo(ctx(), u2.Undo.ID, Options{})
			require.NoError(t, err)
			assert.Equal(t, prior, w.snap())
		})
	}
}

// A path changed after the change: undo refuses with a code naming the
// path and changes nothing; --force restores.
func TestUndo_RefusesAfterALaterChange(t *testing.T) {
	cases := []struct {
		name  string
		later func(w *ws)
		why   string
	}{
		{"content edited later", func(w *ws) { require.NoError(w.t, os.WriteFile(w.path("a.txt"), []byte("user's"), 0o644)) }, "content changed"},
		{"mode changed later", func(w *ws) { require.NoError(w.t, os.Chmod(w.path("a.txt"), 0o600)) }, "mode changed"},
		{"deleted later", func(w *ws) { require.NoError(w.t, os.Remove(w.path("a.txt"))) }, "is gone"},
		{"replaced by a directory later", func(w *ws) {
			require.NoError(w.t, os.Remove(w.path("a.txt")))
			require.NoError(w.t, os.Mkdir(w.path("a.txt"), 0o755))
		}, "now a dir"},
		{"its directory deleted later", func(w *ws) {
			require.NoError(w.t, os.RemoveAll(w.path("d")))
		}, "directory to restore into is gone"},
		{"replaced by a symlink later", func(w *ws) {
			require.NoError(w.t, os.Remove(w.path("a.txt")))
			require.NoError(w.t, os.Symlink("b.txt", w.path("a.txt")))
		}, "now a symlink"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWS(t)
			w.build("a.txt: one", "b.txt: b", "d/", "d/gone.txt: g")
			e := w.change("s1", journal.Write, func() { replaceFile(t, w.path("a.txt"), "two") }, "a.txt")
			if c.name == "its directory deleted later" {
				e = w.change("s1", journal.Delete, func() { require.NoError(t, os.Remove(w.path("d/gone.txt"))) }, "d/gone.txt")
			}
			c.later(w)
			before := w.snap()

			_, err := w.u.Undo(ctx(), e.ID, Options{})
			require.Error(t, err)
			assert.Equal(t, CodeChangedSince, code(err), "%v", err)
			ue, _ := errors.AsType[*Error](err)
			if c.name == "its directory deleted later" {
				assert.Equal(t, w.path("d"), ue.Path)
				assert.Contains(t, err.Error(), c.why)
				assert.Equal(t, before, w.snap(), "nothing changed")
				return
			}
			assert.Equal(t, w.path("a.txt"), ue.Path)
			assert.Contains(t, err.Error(), c.why)
			assert.Equal(t, before, w.snap(), "nothing changed")
			all, err := w.j.List(journal.ListOptions{})
			require.NoError(t, err)
			assert.Len(t, all, 1, "a refused undo records nothing")

			if c.name == "replaced by a directory later" {
				return // force cannot put a file over a directory holding the user's work
			}
			_, err = w.u.Undo(ctx(), e.ID, Options{Force: true})
			require.NoError(t, err)
			b, err := os.ReadFile(w.path("a.txt"))
			require.NoError(t, err)
			assert.Equal(t, "one", string(b), "--force restores")
			assert.Equal(t, "b", string(must(os.ReadFile(w.path("b.txt")))), "a symlink's target is never written")
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// An agent deletes ws/a.txt, then plants ws -> ~: the recorded path now
// runs through a symlink; undo refuses, even with --force, and ~ is
// untouched.
func TestUndo_RefusesASymlinkPlantedAfterTheChange(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			w := newWS(t)
			home := fixture.OutsideDir(t)
			fixture.Build(t, home, ".bashrc: mine")
			w.build("ws/a.txt: agent's victim", "ws/sub/b.txt: b")
			e := w.change("s1", journal.Delete, func() { require.NoError(t, os.Remove(w.path("ws/a.txt"))) }, "ws/a.txt")
			d := w.change("s1", journal.Delete, func() { require.NoError(t, os.RemoveAll(w.path("ws/sub"))) }, "ws/sub")
			require.NoError(t, os.Rename(w.path("ws"), w.path("ws.moved")))
			require.NoError(t, os.Symlink(home, w.path("ws")))
			homeBefore, wsBefore := fixture.Snapshot(t, home), w.snap()

			_, err := w.u.Undo(ctx(), e.ID, Options{Force: force})
			require.Error(t, err)
			assert.Equal(t, CodeUnsafePath, code(err), "%v", err)
			_, err = w.u.UndoSession(ctx(), "s1", Options{Force: force})
			assert.Equal(t, CodeUnsafePath, code(err), "%v", err)
			_, err = w.u.Undo(ctx(), d.ID, Options{Force: force})
			assert.Equal(t, CodeUnsafePath, code(err), "%v", err)
			assert.Equal(t, homeBefore, fixture.Snapshot(t, home), "~ untouched")
			assert.Equal(t, wsBefore, w.snap(), "nothing changed")
		})
	}
}

// --session undoes the session's changes newest first; one refusal
// changes nothing; undone ones are skipped.
func TestUndoSession(t *testing.T) {
	w := newWS(t)
	w.build("a.txt: v1", "keep.txt: other session", "tree/x: x", "tree/y/z: z")
	prior := w.snap()
	e1 := w.change("s1", journal.Edit, func() { replaceFile(t, w.path("a.txt"), "v2") }, "a.txt")
	w.change("s2", journal.Edit, func() { replaceFile(t, w.path("keep.txt"), "s2's") }, "keep.txt")
	w.change("s1", journal.Edit, func() { replaceFile(t, w.path("a.txt"), "v3") }, "a.txt")
	w.change("s1", journal.Move, func() { require.NoError(t, os.Rename(w.path("a.txt"), w.path("b.txt"))) }, "a.txt", "b.txt")
	w.change("s1", journal.Write, func() { require.NoError(t, os.WriteFile(w.path("tree/new"), []byte("n"), 0o644)) }, "tree/new")
	w.change("s1", journal.Delete, func() { require.NoError(t, os.RemoveAll(w.path("tree"))) }, "tree")

	t.Run("a later change to an older entry's path refuses all, nothing changed", func(t *testing.T) {
		require.NoError(t, os.WriteFile(w.path("b.txt"), []byte("user edit"), 0o644))
		before := w.snap()
		_, err := w.u.UndoSession(ctx(), "s1", Options{})
		assert.Equal(t, CodeChangedSince, code(err), "%v", err)
		assert.Equal(t, before, w.snap(), "not even the newest change (the delete) was undone")
		replaceFile(t, w.path("b.txt"), "v3")
	})
	t.Run("undone newest first, bytes exact; the other session's change stays", func(t *testing.T) {
		res, err := w.u.UndoSession(ctx(), "s1", Options{})
		require.NoError(t, err)
		require.Len(t, res.Undone, 5)
		for i := 1; i < len(res.Undone); i++ {
			assert.Greater(t, res.Undone[i-1].Entry.ID, res.Undone[i].Entry.ID, "newest first")
		}
		want := prior
		want["keep.txt"] = w.snap()["keep.txt"]
		got := w.snap()
		assert.Equal(t, "s2's", string(must(os.ReadFile(w.path("keep.txt")))))
		delete(want, "a.txt")
		delete(got, "a.txt")
		assert.Equal(t, want, got)
		assert.Equal(t, "v1", string(must(os.ReadFile(w.path("a.txt")))))
	})
	t.Run("again: everything is skipped as undone already", func(t *testing.T) {
		res, err := w.u.UndoSession(ctx(), "s1", Options{})
		require.NoError(t, err)
		assert.Empty(t, res.Undone)
		require.Len(t, res.Skipped, 5)
		assert.Contains(t, res.Skipped[0].Reason, "undone already")
	})
	t.Run("an undone entry alone is refused", func(t *testing.T) {
		_, err := w.u.Undo(ctx(), e1.ID, Options{})
		assert.Equal(t, CodeAlreadyUndone, code(err))
	})
	t.Run("unknown session and id", func(t *testing.T) {
		_, err := w.u.UndoSession(ctx(), "nope", Options{})
		assert.Equal(t, journal.CodeNotFound, code(err))
		_, err = w.u.Undo(ctx(), "nope", Options{})
		assert.Equal(t, journal.CodeNotFound, code(err))
	})
}

// Content not kept (over the cap) or dropped since is refused with its
// code, nothing changed.
func TestUndo_RefusesWhatTheJournalNoLongerHas(t *testing.T) {
	t.Run("not kept", func(t *testing.T) {
		w := newWS(t)
		j, err := journal.Open(journal.Options{Dir: filepath.Join(t.TempDir(), "small"), MaxBytes: 16, Sync: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = j.Close() })
		w.j, w.u = j, New(j)
		w.build("big.txt: " + strings.Repeat("x", 100))
		e := w.change("s1", journal.Write, func() { replaceFile(t, w.path("big.txt"), "small") }, "big.txt")
		before := w.snap()
		_, err = w.u.Undo(ctx(), e.ID, Options{Force: true})
		assert.Equal(t, CodeNotKept, code(err), "%v", err)
		assert.Equal(t, before, w.snap())
	})
	t.Run("dropped by the cap", func(t *testing.T) {
		w := newWS(t)
		j, err := journal.Open(journal.Options{Dir: filepath.Join(t.TempDir(), "capped"), MaxBytes: 128 << 10, SegmentBytes: 64 << 10, Sync: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = j.Close() })
		w.j, w.u = j, New(j)
		w.build("a.txt: first")
		e := w.change("s1", journal.Write, func() { replaceFile(t, w.path("a.txt"), "second") }, "a.txt")
		// Enough to drop a.txt's segment, not so many that the segment
		// recording the drop goes too (the entry is then unknown:
		// JOURNAL_NOT_FOUND, as the README says).
		for i := range 8 {
			name := fmt.Sprintf("f%d", i)
			w.build(name + ": " + strings.Repeat(name, 10<<10))
			w.change("s2", journal.Write, func() { replaceFile(t, w.path(name), "x") }, name)
		}
		before := w.snap()
		_, err = w.u.Undo(ctx(), e.ID, Options{})
		assert.Equal(t, journal.CodeDropped, code(err), "%v", err)
		assert.Equal(t, before, w.snap())
	})
}

// A crash leaves a change pending: undo decides by the disk.
func TestUndo_PendingIsDecidedByTheDisk(t *testing.T) {
	pending := func(w *ws, publish bool) journal.Entry {
		p := w.path("a.txt")
		require.NoError(t, w.j.Prepare(""))
		tx, err := w.j.Begin(journal.Entry{Session: "s1", Tool: "write", Kind: journal.Write, Paths: []string{p}})
		require.NoError(t, err)
		par, base, err := openParent(p)
		require.NoError(t, err)
		_, err = tx.Capture(par, base, p)
		require.NoError(t, err)
		require.NoError(t, par.Close())
		after := *must(lookNode(p))
		after.Hash, after.Size = "sha256:"+strings.Repeat("0", 64), 3
		if publish {
			replaceFile(t, p, "new")
			after = *must(lookNode(p))
		}
		tx.SetAfter([]journal.Node{after})
		e, err := tx.Commit()
		require.NoError(t, err)
		return e // no Finish: the process died
	}
	t.Run("published: undone", func(t *testing.T) {
		w := newWS(t)
		w.build("a.txt: old")
		e := pending(w, true)
		_, err := w.u.Undo(ctx(), e.ID, Options{})
		require.NoError(t, err)
		assert.Equal(t, "old", string(must(os.ReadFile(w.path("a.txt")))))
	})
	t.Run("never published: nothing to do", func(t *testing.T) {
		w := newWS(t)
		w.build("a.txt: old")
		e := pending(w, false)
		before := w.snap()
		_, err := w.u.Undo(ctx(), e.ID, Options{})
		assert.Equal(t, CodeNothingToUndo, code(err), "%v", err)
		res, err := w.u.UndoSession(ctx(), "s1", Options{})
		require.NoError(t, err)
		require.Len(t, res.Skipped, 1)
		assert.Contains(t, res.Skipped[0].Reason, "never reached the disk")
		assert.Equal(t, before, w.snap())
	})
}

// Only root can give a file away: the owner test is root's.
func TestUndo_RestoresTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file another owner needs root; as a user the files are the user's own (the kind table checks they stay so)")
	}
	w := newWS(t)
	w.build("a.txt: one", "d/", "d/f: f")
	e := w.change("s1", journal.Write, func() { replaceFile(t, w.path("a.txt"), "two") }, "a.txt")
	d := w.change("s1", journal.Delete, func() { require.NoError(t, os.RemoveAll(w.path("d"))) }, "d")
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(w.path("a.txt"), &st))
	require.Equal(t, uint32(0), st.Uid, "the change left a root-owned file")
	_, err := w.u.Undo(ctx(), e.ID, Options{})
	require.NoError(t, err)
	_, err = w.u.Undo(ctx(), d.ID, Options{})
	require.NoError(t, err)
	for _, p := range []string{"a.txt", "d", "d/f"} {
		require.NoError(t, syscall.Lstat(w.path(p), &st))
		assert.Equal(t, [2]uint32{otherUID, otherUID}, [2]uint32{st.Uid, st.Gid}, p)
	}
	names := make([]string, 0)
	for k := range w.snap() {
		names = append(names, k)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"a.txt", "d", "d/f"}, names)
}

// freeze makes dir refuse new entries to this process: the immutable flag
// as root (which permissions do not stop), mode 0555 otherwise; undone at
// cleanup.
func freeze(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		return
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	defer unix.Close(fd) //nolint:errcheck // test
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, fsImmutableFL); err != nil {
		t.Skipf("the filesystem of %s takes no immutable flag (%v): the failure cannot be provoked as root", dir, err)
	}
	t.Cleanup(func() {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err == nil {
			_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, 0)
			_ = unix.Close(fd)
		}
	})
}

// A restore the disk refuses after the checks passed: recorded failed
// when it changed nothing; a session keeps what it undid before.
func TestUndo_RestoreFailure(t *testing.T) {
	w := newWS(t)
	w.build("open/a.txt: a1", "frozen/t/x: x", "frozen/t/y/z: z")
	older := w.change("s1", journal.Delete, func() { require.NoError(t, os.RemoveAll(w.path("frozen/t"))) }, "frozen/t")
	newer := w.change("s1", journal.Edit, func() { replaceFile(t, w.path("open/a.txt"), "a2") }, "open/a.txt")
	freeze(t, w.path("frozen"))
	before := w.snap()

	_, err := w.u.Undo(ctx(), older.ID, Options{})
	require.Error(t, err)
	assert.Equal(t, CodeRestoreFailed, code(err), "%v", err)
	assert.Contains(t, err.Error(), "before changing anything")
	assert.Equal(t, before, w.snap())
	all, err := w.j.List(journal.ListOptions{})
	require.NoError(t, err)
	require.Len(t, all, 3)
	assert.Equal(t, journal.Failed, all[2].Status, "the undo is recorded failed")
	assert.Empty(t, UndoneBy(all)[older.ID])

	res, err := w.u.UndoSession(ctx(), "s1", Options{})
	assert.Equal(t, CodeRestoreFailed, code(err), "%v", err)
	require.Len(t, res.Undone, 1, "the newer change was undone before the older failed")
	assert.Equal(t, newer.ID, res.Undone[0].Entry.ID)
	assert.Equal(t, "a1", string(must(os.ReadFile(w.path("open/a.txt")))))
	_, err = os.Lstat(w.path("frozen/t"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h (x/sys/unix does not
// name it).
const fsImmutableFL = 0x00000010

// A symlink planted at the path itself (ws/a.txt -> ~/.bashrc) is a later
// change: refused; --force replaces the link, never writing its target.
func TestUndo_ForceReplacesAPlantedLinkNotItsTarget(t *testing.T) {
	w := newWS(t)
	home := fixture.OutsideDir(t)
	fixture.Build(t, home, ".bashrc: mine")
	w.build("ws/a.txt: victim")
	e := w.change("s1", journal.Delete, func() { require.NoError(t, os.Remove(w.path("ws/a.txt"))) }, "ws/a.txt")
	require.NoError(t, os.Symlink(filepath.Join(home, ".bashrc"), w.path("ws/a.txt")))
	homeBefore := fixture.Snapshot(t, home)

	_, err := w.u.Undo(ctx(), e.ID, Options{})
	assert.Equal(t, CodeChangedSince, code(err), "%v", err)
	_, err = w.u.Undo(ctx(), e.ID, Options{Force: true})
	require.NoError(t, err)
	fi, err := os.Lstat(w.path("ws/a.txt"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the link itself is replaced")
	assert.Equal(t, "victim", string(must(os.ReadFile(w.path("ws/a.txt")))))
	assert.Equal(t, homeBefore, fixture.Snapshot(t, home), "~ untouched")
}

// A directory mkdir made is checked by existence: made again since, it is
// still removed; holding an entry since, the undo refuses.
func TestUndo_MkdirIsCheckedByExistence(t *testing.T) {
	w := newWS(t)
	e := w.change("s1", journal.Mkdir, func() { require.NoError(t, os.Mkdir(w.path("made"), 0o755)) }, "made")
	require.NoError(t, os.Remove(w.path("made")))
	require.NoError(t, os.Mkdir(w.path("made"), 0o700))
	require.NoError(t, os.WriteFile(w.path("made/user.txt"), []byte("u"), 0o644))

	_, err := w.u.Undo(ctx(), e.ID, Options{})
	assert.Equal(t, CodeChangedSince, code(err), "%v", err)
	assert.Contains(t, err.Error(), "made/user.txt")
	require.NoError(t, os.Remove(w.path("made/user.txt")))

	_, err = w.u.Undo(ctx(), e.ID, Options{})
	require.NoError(t, err)
	_, err = os.Lstat(w.path("made"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

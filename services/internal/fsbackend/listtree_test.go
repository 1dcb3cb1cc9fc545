//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/internal/fsbackend"
)

// treeEntry is what TestListDirTree checks of one entry.
type treeEntry struct {
	Path    string
	Type    fs.FileType
	Size    int64 // -1: none
	ModTime time.Time
	Symlink bool
	Reason  string
}

func summarizeTree(entries []fs.DirEntry) []treeEntry {
	out := make([]treeEntry, len(entries))
	for i, e := range entries {
		size := int64(-1)
		if e.Size != nil {
			size = *e.Size
		}
		out[i] = treeEntry{Path: e.Path, Type: e.Type, Size: size, ModTime: e.ModTime, Symlink: e.Symlink, Reason: e.Reason}
	}
	return out
}

// TestListDirTree covers the tree listing (issue 16): depth-first order with
// each directory's names in byte order, exact sizes and modification times,
// paths relative to the listed directory, symlinks listed and never
// descended, nothing skipped (".git" included), windows over the tree with
// Partial when the walk stopped before counting everything, and the walk cap.
func TestListDirTree(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir,
		"t/a.txt: aa",
		"t/b/c.txt: ccc",
		"t/b/d/e.txt: e",
		"t/b/d/f/g.txt: gggg",
		"t/.git/HEAD: ref",
		"t/link => b",
		"t/z.txt: z",
	)
	mtime := map[string]time.Time{}
	for i, p := range []string{"a.txt", "b/c.txt", "b/d/e.txt", "b/d/f/g.txt", "b/d/f", "b/d", "b", ".git/HEAD", ".git", "z.txt"} {
		// Children first: setting a directory's time after its entries
		// keeps it.
		mt := time.Date(2020, 1, 1+i, 2, 3, 4, 5000*i, time.UTC)
		require.NoError(t, os.Chtimes(filepath.Join(dir, "t", p), mt, mt))
		mtime[p] = mt
	}
	mtime["link"] = mtime["b"] // a symlink reports its destination's time
	all := map[string]treeEntry{
		".git":        {Path: ".git", Type: fs.TypeDirectory, Size: -1},
		".git/HEAD":   {Path: ".git/HEAD", Type: fs.TypeFile, Size: 3},
		"a.txt":       {Path: "a.txt", Type: fs.TypeFile, Size: 2},
		"b":           {Path: "b", Type: fs.TypeDirectory, Size: -1},
		"b/c.txt":     {Path: "b/c.txt", Type: fs.TypeFile, Size: 3},
		"b/d":         {Path: "b/d", Type: fs.TypeDirectory, Size: -1},
		"b/d/e.txt":   {Path: "b/d/e.txt", Type: fs.TypeFile, Size: 1},
		"b/d/f":       {Path: "b/d/f", Type: fs.TypeDirectory, Size: -1},
		"b/d/f/g.txt": {Path: "b/d/f/g.txt", Type: fs.TypeFile, Size: 4},
		"link":        {Path: "link", Type: fs.TypeDirectory, Size: -1, Symlink: true},
		"z.txt":       {Path: "z.txt", Type: fs.TypeFile, Size: 1},
	}
	want := func(paths ...string) []treeEntry {
		out := make([]treeEntry, len(paths))
		for i, p := range paths {
			out[i] = all[p]
			out[i].ModTime = mtime[p]
		}
		return out
	}
	depth1 := []string{".git", "a.txt", "b", "link", "z.txt"}
	depth2 := []string{".git", ".git/HEAD", "a.txt", "b", "b/c.txt", "b/d", "link", "z.txt"}
	depth3 := []string{".git", ".git/HEAD", "a.txt", "b", "b/c.txt", "b/d", "b/d/e.txt", "b/d/f", "link", "z.txt"}
	depth4 := []string{".git", ".git/HEAD", "a.txt", "b", "b/c.txt", "b/d", "b/d/e.txt", "b/d/f", "b/d/f/g.txt", "link", "z.txt"}

	cases := []struct {
		name     string
		window   fs.ListWindow
		maxNames int // 0: fs.MaxListTreeNames
		want     []string
		total    int
		partial  bool
		capped   bool
	}{
		{name: "depth 0 is depth 1: the directory's own entries", want: depth1, total: 5},
		{name: "depth 1 lists the directory's own entries, the symlinked directory as a directory", window: fs.ListWindow{Depth: 1}, want: depth1, total: 5},
		{name: "depth 2 adds the subdirectories' entries, .git included, the symlinked directory not descended", window: fs.ListWindow{Depth: 2}, want: depth2, total: 8},
		{name: "depth 3", window: fs.ListWindow{Depth: 3}, want: depth3, total: 10},
		{name: "depth 10 lists the whole tree", window: fs.ListWindow{Depth: fs.MaxListDepth}, want: depth4, total: 11},
		{name: "a depth above the maximum is the maximum", window: fs.ListWindow{Depth: 99}, want: depth4, total: 11},
		{
			name: "a window ending before a directory's entries leaves the total a lower bound", window: fs.ListWindow{Depth: 3, Limit: 3},
			want: []string{".git", ".git/HEAD", "a.txt"}, total: 6, partial: true,
		},
		{
			name: "a window filled on a directory does not read it", window: fs.ListWindow{Depth: 3, Offset: 4, Limit: 3},
			want: []string{"b", "b/c.txt", "b/d"}, total: 8, partial: true,
		},
		{
			name: "the last window counts everything", window: fs.ListWindow{Depth: 3, Offset: 8, Limit: 3},
			want: []string{"b/d/f", "link", "z.txt"}, total: 10,
		},
		{
			name: "a window of exactly the tree is complete", window: fs.ListWindow{Depth: 3, Limit: 10},
			want: depth3, total: 10,
		},
		{
			name:   "a window filled inside a subdirectory leaves the rest of the tree uncounted",
			window: fs.ListWindow{Depth: 2, Limit: 2}, want: []string{".git", ".git/HEAD"}, total: 6, partial: true,
		},
		{
			name: "the walk cap stops opening directories; the listed directory is read whole", window: fs.ListWindow{Depth: 3}, maxNames: 6,
			want: []string{".git", ".git/HEAD", "a.txt", "b"}, total: 6, partial: true, capped: true,
		},
		{
			name: "the walk cap never stops the listed directory's own names", window: fs.ListWindow{Depth: 3}, maxNames: 1,
			want: []string{".git"}, total: 5, partial: true, capped: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsbackend.SetMaxTreeNames(f, fs.MaxListTreeNames)
			if tc.maxNames > 0 {
				fsbackend.SetMaxTreeNames(f, tc.maxNames)
			}
			l, err := f.ListDir(context.Background(), resolve(t, f, "t"), tc.window)
			require.NoError(t, err)
			assert.Equal(t, want(tc.want...), summarizeTree(l.Entries))
			assert.Equal(t, tc.total, l.Total, "total")
			assert.Equal(t, tc.partial, l.Partial, "partial")
			assert.Equal(t, tc.capped, l.WalkCapped, "walk capped")
			for _, e := range l.Entries {
				assert.Equal(t, filepath.Base(e.Path), e.Name)
				assert.Equal(t, filepath.Join(dir, "t", e.Path), e.Target.DisplayPath)
				wantKey := filepath.Join(dir, "t", e.Path)
				if e.Symlink {
					wantKey = filepath.Join(dir, "t", "b")
				}
				assert.Equal(t, fs.TargetKey(wantKey), e.Target.Key)
				assert.NotEmpty(t, e.Version)
			}
		})
	}
	fsbackend.SetMaxTreeNames(f, fs.MaxListTreeNames)

	t.Run("a symlink loop and a dangling symlink in a subdirectory are listed as other; the walk goes on", func(t *testing.T) {
		fixture.Build(t, dir, "u/s/loop => loop", "u/s/gone => nowhere", "u/s/ok.txt: ok", "u/y.txt: y")
		l, err := f.ListDir(context.Background(), resolve(t, f, "u"), fs.ListWindow{Depth: 2})
		require.NoError(t, err)
		assert.Equal(t, []string{"s:directory", "gone:other", "loop:other", "ok.txt:file", "y.txt:file"}, entrySummary(l.Entries))
		assert.Equal(t, "dangling symlink", l.Entries[1].Reason)
		assert.Equal(t, "symlink loop", l.Entries[2].Reason)
		assert.True(t, l.Entries[1].Symlink)
		assert.Equal(t, 5, l.Total)
	})

	t.Run("a window ending on a file, names past it that may be directories, is partial", func(t *testing.T) {
		fixture.Build(t, dir, "v/a.txt: a", "v/b/c.txt: c")
		l, err := f.ListDir(context.Background(), resolve(t, f, "v"), fs.ListWindow{Depth: 2, Limit: 1})
		require.NoError(t, err)
		assert.Equal(t, []string{"a.txt:file"}, entrySummary(l.Entries))
		assert.Equal(t, 2, l.Total)
		assert.True(t, l.Partial)
	})

	t.Run("a cancelled context aborts a tree walk", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		l, err := f.ListDir(ctx, resolve(t, f, "t"), fs.ListWindow{Depth: 3})
		require.NoError(t, err)
		require.Len(t, l.Entries, 10)
		cancel()
		_, err = f.ListDir(ctx, resolve(t, f, "t"), fs.ListWindow{Depth: 3})
		expectFSErr(t, err, fs.ErrAborted, "list aborted")
	})
}

// TestListDirTreeUnreadableAsNobody: a subdirectory the process may not
// read keeps its entry, with the reason, and the walk goes on past it.
func TestListDirTreeUnreadableAsNobody(t *testing.T) {
	dir, run := asNobody(t, func(dir string) {
		fixture.Build(t, dir, "t/a/secret.txt: s", "t/b/ok.txt: ok", "t/c.txt: c")
		require.NoError(t, os.Chmod(filepath.Join(dir, "t", "a"), 0o000))
	})
	if !run {
		return
	}
	f, err := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	require.NoError(t, err)
	l, err := f.ListDir(context.Background(), resolve(t, f, "t"), fs.ListWindow{Depth: 3})
	require.NoError(t, err)
	got := summarizeTree(l.Entries)
	require.Len(t, got, 4)
	assert.Equal(t, []string{"a", "b", "b/ok.txt", "c.txt"}, []string{got[0].Path, got[1].Path, got[2].Path, got[3].Path})
	assert.Equal(t, fs.TypeDirectory, got[0].Type)
	assert.Equal(t, "permission denied", got[0].Reason, "the unreadable directory says why")
	assert.False(t, got[0].ModTime.IsZero(), "its own metadata is still read")
	assert.Empty(t, got[1].Reason)
	assert.Equal(t, 4, l.Total)
	assert.False(t, l.Partial)
}

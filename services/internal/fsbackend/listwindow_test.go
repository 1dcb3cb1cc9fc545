//go:build linux

package fsbackend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// TestListDirBadChildren: one bad child never fails the listing; it is
// listed as other with a short reason (decision 16, superseding L-50).
func TestListDirBadChildren(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir,
		"d/ok.txt: ok",
		"d/loop => loop",
		"d/a-loop => b-loop",
		"d/b-loop => a-loop",
		"d/dangling => nowhere",
		"d/through-file => ok.txt/x",
	)
	before := fixture.Snapshot(t, dir)
	entries, err := listAll(context.Background(), f, resolve(t, f, "d"))
	require.NoError(t, err, "one bad child never fails the listing")
	assert.Equal(t, []string{
		"a-loop:other", "b-loop:other", "dangling:other", "loop:other", "ok.txt:file", "through-file:other",
	}, entrySummary(entries))
	reasons := map[string]string{}
	for _, e := range entries {
		reasons[e.Name] = e.Reason
		if e.Type == fs.TypeOther {
			assert.Empty(t, e.Version, e.Name)
			assert.Nil(t, e.Size, e.Name)
		}
	}
	assert.Equal(t, map[string]string{
		"a-loop": "symlink loop", "b-loop": "symlink loop", "loop": "symlink loop",
		"dangling": "dangling symlink", "through-file": "dangling symlink", "ok.txt": "",
	}, reasons)
	assert.Equal(t, dir+"/d/loop", entryNamed(t, entries, "loop").Target.DisplayPath)
	assert.Equal(t, before, fixture.Snapshot(t, dir), "listing changes nothing on disk")
}

// TestListDirWindow: the window selects by byte order of names whatever the
// order the filesystem reports them in, stats only its entries, and the
// total counts the whole directory.
func TestListDirWindow(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	// 300 names created in an order unrelated to byte order.
	for i := range 300 {
		name := fmt.Sprintf("n%03d", (i*7)%300)
		fixture.Build(t, dir, "d/"+name+": "+name)
	}
	// A loop sorts last: a window that reaches it lists it as other.
	fixture.Build(t, dir, "d/zz-loop => zz-loop")
	tg := resolve(t, f, "d")
	ctx := context.Background()
	cases := []struct {
		name          string
		window        fs.ListWindow
		first, last   string
		count, offset int
	}{
		{name: "limit 1 is the smallest name", window: fs.ListWindow{Limit: 1}, first: "n000", last: "n000", count: 1},
		{name: "offset 1 limit 1 is the same", window: fs.ListWindow{Offset: 1, Limit: 1}, first: "n000", last: "n000", count: 1},
		{name: "a middle window", window: fs.ListWindow{Offset: 101, Limit: 50}, first: "n100", last: "n149", count: 50},
		{name: "a window past the end is cut", window: fs.ListWindow{Offset: 290, Limit: 50}, first: "n289", last: "zz-loop", count: 12},
		{name: "offset past the end: no entries", window: fs.ListWindow{Offset: 400, Limit: 5}, count: 0},
		{name: "a huge offset does not overflow", window: fs.ListWindow{Offset: int(^uint(0) >> 1), Limit: 5}, count: 0},
		{name: "no limit: everything", window: fs.ListWindow{}, first: "n000", last: "zz-loop", count: 301},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := f.ListDir(ctx, tg, tc.window)
			require.NoError(t, err)
			assert.Equal(t, 301, l.Total)
			require.Len(t, l.Entries, tc.count)
			require.NotNil(t, l.Entries)
			if tc.count == 0 {
				return
			}
			assert.Equal(t, tc.first, l.Entries[0].Name)
			assert.Equal(t, tc.last, l.Entries[len(l.Entries)-1].Name)
			for i := 1; i < len(l.Entries); i++ {
				assert.Less(t, l.Entries[i-1].Name, l.Entries[i].Name)
			}
			for _, e := range l.Entries {
				if e.Name == "zz-loop" {
					assert.Equal(t, "symlink loop", e.Reason)
					continue
				}
				require.NotNil(t, e.Size, e.Name)
				assert.Equal(t, int64(4), *e.Size)
			}
		})
	}
}

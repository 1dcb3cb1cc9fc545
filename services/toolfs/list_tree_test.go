//go:build linux

package toolfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/toolfs"
)

// TestListTree pins list's depth argument (issue 16): the text and the
// structured value of a tree on a real directory with known modification
// times, a symlinked directory listed and not descended, the cut note and
// the lower-bound total, and the refused depths.
func TestListTree(t *testing.T) {
	base := rdDir(t)
	ws := filepath.Join(base, "ws")
	fixture.Build(t, ws,
		"a.txt: aa",
		"src/main.go: package main\n",
		"src/pkg/x.go: package pkg\n",
		"src/pkg/deep/y.go: y",
		"link => src",
		"bad\nname/inner.txt: i",
	)
	stamp := func(i int) time.Time { return time.Date(2024, 5, 6, 7, 8, i, 250_000_000, time.UTC) }
	for i, p := range []string{"a.txt", "src/main.go", "src/pkg/x.go", "src/pkg/deep/y.go", "src/pkg/deep", "src/pkg", "src", "bad\nname/inner.txt", "bad\nname"} {
		require.NoError(t, os.Chtimes(filepath.Join(ws, p), stamp(i), stamp(i)))
	}
	mod := func(i int) string { return "modified 2024-05-06T07:08:0" + string(rune('0'+i)) + "Z" }
	rfc := func(i int) string { return "2024-05-06T07:08:0" + string(rune('0'+i)) + ".25Z" }

	cases := []struct {
		name    string
		args    map[string]any
		body    string
		entries []toolfs.ListEntry // nil: not checked
		depth   int
		total   int
		lower   bool
		cut     bool
		wantErr string
	}{
		{
			name: "depth 2: each directory followed by its entries, paths relative, the symlinked directory listed and not descended, a control character quoted",
			args: map[string]any{"depth": 2},
			body: "a.txt (2 bytes, " + mod(0) + ")\n" +
				`"bad\nname"/ (` + mod(8) + ")\n" +
				`"bad\nname/inner.txt" (1 bytes, ` + mod(7) + ")\n" +
				"link/ (symlink, " + mod(6) + ")\n" +
				"src/ (" + mod(6) + ")\n" +
				"src/main.go (13 bytes, " + mod(1) + ")\n" +
				"src/pkg/ (" + mod(5) + ")\n" +
				"\n(End of tree - total 7 entries)",
			entries: []toolfs.ListEntry{
				{Name: "a.txt", Path: "a.txt", Type: "file", Size: rdSize(2), ModTime: rfc(0)},
				{Name: "bad\nname", Path: "bad\nname", Type: "directory", ModTime: rfc(8)},
				{Name: "inner.txt", Path: "bad\nname/inner.txt", Type: "file", Size: rdSize(1), ModTime: rfc(7)},
				{Name: "link", Path: "link", Type: "directory", Symlink: true, ModTime: rfc(6)},
				{Name: "src", Path: "src", Type: "directory", ModTime: rfc(6)},
				{Name: "main.go", Path: "src/main.go", Type: "file", Size: rdSize(13), ModTime: rfc(1)},
				{Name: "pkg", Path: "src/pkg", Type: "directory", ModTime: rfc(5)},
			},
			depth: 2, total: 7,
		},
		{
			name: "depth 3 reaches the third level",
			args: map[string]any{"depth": 3, "offset": 6},
			body: "src/main.go (13 bytes, " + mod(1) + ")\n" +
				"src/pkg/ (" + mod(5) + ")\n" +
				"src/pkg/deep/ (" + mod(4) + ")\n" +
				"src/pkg/x.go (12 bytes, " + mod(2) + ")\n" +
				"\n(End of tree - total 9 entries)",
			depth: 3, total: 9,
		},
		{
			name: "a window cut inside the tree says so, the total a lower bound",
			args: map[string]any{"depth": 10, "limit": 4},
			body: "a.txt (2 bytes, " + mod(0) + ")\n" +
				`"bad\nname"/ (` + mod(8) + ")\n" +
				`"bad\nname/inner.txt" (1 bytes, ` + mod(7) + ")\n" +
				"link/ (symlink, " + mod(6) + ")\n" +
				"\n(Showing entries 1-4 of at least 5. Use offset=5 to continue.)",
			depth: 10, total: 5, lower: true, cut: true,
		},
		{
			name: "the next window continues it",
			args: map[string]any{"depth": 10, "offset": 5, "limit": 4},
			body: "src/ (" + mod(6) + ")\n" +
				"src/main.go (13 bytes, " + mod(1) + ")\n" +
				"src/pkg/ (" + mod(5) + ")\n" +
				"src/pkg/deep/ (" + mod(4) + ")\n" +
				"\n(Showing entries 5-8 of at least 9. Use offset=9 to continue.)",
			depth: 10, total: 9, lower: true, cut: true,
		},
		{
			name: "the last window ends the tree",
			args: map[string]any{"depth": 10, "offset": 9, "limit": 4},
			body: "src/pkg/deep/y.go (1 bytes, " + mod(3) + ")\n" +
				"src/pkg/x.go (12 bytes, " + mod(2) + ")\n" +
				"\n(End of tree - total 10 entries)",
			depth: 10, total: 10,
		},
		{name: "depth 0 is refused", args: map[string]any{"depth": 0}, wantErr: "Error: depth must be a positive integer"},
		{name: "depth 1.5 is refused", args: map[string]any{"depth": 1.5}, wantErr: "Error: depth must be a positive integer"},
		{name: "depth 11 is refused", args: map[string]any{"depth": 11}, wantErr: "Error: depth must be less than or equal to 10"},
		{name: "a string depth is refused", args: map[string]any{"depth": "2"}, wantErr: "Error: depth must be a positive integer"},
		{
			name: "an offset past a complete tree is out of range",
			args: map[string]any{"depth": 2, "offset": 8}, wantErr: `Error: offset 8 is out of range for "` + ws + `" (7 entries); the directory is there: use an offset from 1 to 7`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tools := rdTools(t, toolfs.Config{}, rdLocal(t, base))
			tc.args["path"] = ws
			res := rdCall(t, tools.List(), nil, rdArgs(t, tc.args))
			if tc.wantErr != "" {
				require.True(t, res.IsError, res.Text)
				assert.Equal(t, tc.wantErr, res.Text)
				return
			}
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, rdListing(ws, tc.body), res.Text)
			v, ok := res.Value.(toolfs.ListValue)
			require.True(t, ok)
			assert.Equal(t, tc.depth, v.Depth)
			assert.Equal(t, tc.total, v.TotalEntries)
			assert.Equal(t, tc.lower, v.TotalIsLowerBound)
			assert.Equal(t, tc.cut, v.Truncated)
			assert.False(t, v.WalkCapped)
			if tc.entries != nil {
				assert.Equal(t, tc.entries, v.Entries)
			}
			// One line per entry: no name forges a line.
			assert.Len(t, strings.Split(tc.body, "\n"), len(v.Entries)+2)
		})
	}
}

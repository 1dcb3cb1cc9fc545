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

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolfs"
)

// rdListFixture builds the fixture of L-42 in dir/ws and returns that
// directory.
func rdListFixture(t *testing.T, dir string) string {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	rdFile(t, ws, "zeta.md", "zzzz")
	rdFile(t, ws, "alpha.md", "aaaaa")
	require.NoError(t, os.Mkdir(filepath.Join(ws, "dir-skill"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(ws, "nowhere"), filepath.Join(ws, "broken-link")))
	for name, mtime := range map[string]time.Time{"alpha.md": rdAlphaTime, "zeta.md": rdZetaTime, "dir-skill": rdSkillTime} {
		require.NoError(t, os.Chtimes(filepath.Join(ws, name), mtime, mtime))
	}
	return ws
}

// The modification times rdListFixture gives its entries.
var (
	rdAlphaTime = time.Date(2021, 1, 2, 3, 4, 5, 123456789, time.UTC)
	rdZetaTime  = time.Date(2022, 6, 7, 8, 9, 10, 0, time.FixedZone("CEST", 2*3600))
	rdSkillTime = time.Date(1999, 12, 31, 23, 59, 59, 500000000, time.UTC)
)

func rdSize(n int64) *int64 { return &n }

// TestList pins the list tool (an addition of this port): the exact text,
// the structured value, paging and its errors.
func TestList(t *testing.T) {
	alpha := toolfs.ListEntry{Name: "alpha.md", Path: "alpha.md", Type: "file", Size: rdSize(5), ModTime: "2021-01-02T03:04:05.123456789Z"}
	broken := toolfs.ListEntry{Name: "broken-link", Path: "broken-link", Type: "other", Symlink: true, Reason: "dangling symlink"}
	skill := toolfs.ListEntry{Name: "dir-skill", Path: "dir-skill", Type: "directory", ModTime: "1999-12-31T23:59:59.5Z"}
	zeta := toolfs.ListEntry{Name: "zeta.md", Path: "zeta.md", Type: "file", Size: rdSize(4), ModTime: "2022-06-07T06:09:10Z"}
	const allBody = "alpha.md (5 bytes, modified 2021-01-02T03:04:05Z)\nbroken-link (other: dangling symlink)\ndir-skill/ (modified 1999-12-31T23:59:59Z)\nzeta.md (4 bytes, modified 2022-06-07T06:09:10Z)\n\n(End of directory - total 4 entries)"

	cases := []struct {
		name     string
		cfg      toolfs.Config
		sessCwd  string // "WS": the fixture; "NONE": no session; "": the fixture's parent
		args     string // DIR is replaced by the fixture's path
		wantDP   string // "WS", "EMPTY" or a path relative to the fixture
		wantBody string
		offset   int
		entries  []toolfs.ListEntry
		total    int
		wantErr  string // the whole error text, DP replaced by the display path
		wantCode fs.Code
	}{
		{
			name: "L-42 fixture by absolute path", args: `{"path":"DIR"}`, wantDP: "WS",
			wantBody: allBody, offset: 1, entries: []toolfs.ListEntry{alpha, broken, skill, zeta}, total: 4,
		},
		{
			name: "L-42 fixture by relative path", args: `{"path":"ws"}`, wantDP: "WS",
			wantBody: allBody, offset: 1, entries: []toolfs.ListEntry{alpha, broken, skill, zeta}, total: 4,
		},
		{
			name: "default path is the session cwd", sessCwd: "WS", args: `{}`, wantDP: "WS",
			wantBody: allBody, offset: 1, entries: []toolfs.ListEntry{alpha, broken, skill, zeta}, total: 4,
		},
		{
			name: "null path is the session cwd", sessCwd: "WS", args: `{"path":null}`, wantDP: "WS",
			wantBody: allBody, offset: 1, entries: []toolfs.ListEntry{alpha, broken, skill, zeta}, total: 4,
		},
		{
			name: "dot is the session cwd", sessCwd: "WS", args: `{"path":"."}`, wantDP: "WS",
			wantBody: allBody, offset: 1, entries: []toolfs.ListEntry{alpha, broken, skill, zeta}, total: 4,
		},
		{
			name: "page 1 of 2", args: `{"path":"DIR","limit":2}`, wantDP: "WS",
			wantBody: "alpha.md (5 bytes, modified 2021-01-02T03:04:05Z)\nbroken-link (other: dangling symlink)\n\n(Showing entries 1-2 of 4. Use offset=3 to continue.)",
			offset:   1, entries: []toolfs.ListEntry{alpha, broken}, total: 4,
		},
		{
			name: "page 2 of 2", args: `{"path":"DIR","offset":3,"limit":2}`, wantDP: "WS",
			wantBody: "dir-skill/ (modified 1999-12-31T23:59:59Z)\nzeta.md (4 bytes, modified 2022-06-07T06:09:10Z)\n\n(End of directory - total 4 entries)",
			offset:   3, entries: []toolfs.ListEntry{skill, zeta}, total: 4,
		},
		{
			name: "middle page", args: `{"path":"DIR","offset":2,"limit":2}`, wantDP: "WS",
			wantBody: "broken-link (other: dangling symlink)\ndir-skill/ (modified 1999-12-31T23:59:59Z)\n\n(Showing entries 2-3 of 4. Use offset=4 to continue.)",
			offset:   2, entries: []toolfs.ListEntry{broken, skill}, total: 4,
		},
		{
			name: "last entry", args: `{"path":"DIR","offset":4}`, wantDP: "WS",
			wantBody: "zeta.md (4 bytes, modified 2022-06-07T06:09:10Z)\n\n(End of directory - total 4 entries)",
			offset:   4, entries: []toolfs.ListEntry{zeta}, total: 4,
		},
		{
			name: "ListLimit 2 is the default page", cfg: toolfs.Config{ListLimit: 2}, args: `{"path":"DIR"}`, wantDP: "WS",
			wantBody: "alpha.md (5 bytes, modified 2021-01-02T03:04:05Z)\nbroken-link (other: dangling symlink)\n\n(Showing entries 1-2 of 4. Use offset=3 to continue.)",
			offset:   1, entries: []toolfs.ListEntry{alpha, broken}, total: 4,
		},
		{
			name: "empty directory", args: `{"path":"ws/dir-skill"}`, wantDP: "dir-skill",
			wantBody: "(End of directory - total 0 entries)", offset: 1, entries: []toolfs.ListEntry{}, total: 0,
		},
		{
			name: "offset past the end", args: `{"path":"DIR","offset":5}`,
			wantErr: `Error: offset 5 is out of range for "DP" (4 entries); the directory is there: use an offset from 1 to 4`, wantCode: errcode.InvalidArgument,
		},
		{
			name: "offset 2 of an empty directory", args: `{"path":"ws/dir-skill","offset":2}`,
			wantErr: `Error: offset 2 is out of range for "DP/dir-skill" (0 entries); the directory is there: use offset 1`, wantCode: errcode.InvalidArgument,
		},
		{
			name: "a file is not a directory", args: `{"path":"ws/alpha.md"}`,
			wantErr: `Error: cannot list "DP/alpha.md": not a directory`, wantCode: fs.CodeNotDirectory,
		},
		{
			name: "a missing directory", args: `{"path":"ws/nope"}`,
			wantErr: `Error: cannot list "DP/nope": not found`, wantCode: fs.CodeNotFound,
		},
		{
			name: "limit above ListLimit", args: `{"path":"DIR","limit":1001}`,
			wantErr: "Error: limit must be less than or equal to 1000",
		},
		{
			name: "limit above a configured ListLimit", cfg: toolfs.Config{ListLimit: 2}, args: `{"path":"DIR","limit":3}`,
			wantErr: "Error: limit must be less than or equal to 2",
		},
		{name: "limit 0", args: `{"path":"DIR","limit":0}`, wantErr: "Error: limit must be a positive integer"},
		{name: "offset 0", args: `{"path":"DIR","offset":0}`, wantErr: "Error: offset must be a positive integer"},
		{name: "offset 1.5", args: `{"path":"DIR","offset":1.5}`, wantErr: "Error: offset must be a positive integer"},
		{name: "blank path", args: `{"path":"  "}`, wantErr: "Error: path must be a non-empty string"},
		{name: "numeric path", args: `{"path":3}`, wantErr: "Error: path must be a non-empty string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := rdDir(t)
			ws := rdListFixture(t, base)
			rec := &rdRecorder{}
			tools := rdTools(t, tc.cfg, rdLocal(t, base), rec)
			var sess *session.Session
			switch tc.sessCwd {
			case "WS":
				sess = session.New("s1", ws)
			case "":
				sess = session.New("s1", base)
			}
			res := rdCall(t, tools.List(), sess, strings.ReplaceAll(tc.args, "DIR", ws))
			assert.Empty(t, rec.all(), "list observes nothing")
			if tc.wantErr != "" {
				assert.True(t, res.IsError)
				assert.Equal(t, strings.ReplaceAll(tc.wantErr, "DP", ws), res.Text)
				assert.EqualValues(t, rdWantCode(tc.wantCode), res.Code)
				assert.Nil(t, res.Value)
				return
			}
			require.False(t, res.IsError, res.Text)
			assert.Empty(t, res.Code)
			dp := ws
			if tc.wantDP != "WS" {
				dp = filepath.Join(ws, tc.wantDP)
			}
			assert.Equal(t, rdListing(dp, tc.wantBody), res.Text)
			assert.Equal(t, toolfs.ListValue{
				Path: dp, Offset: tc.offset, Depth: 1, Entries: tc.entries, TotalEntries: tc.total,
				Truncated: tc.offset-1+len(tc.entries) < tc.total,
			}, res.Value)
		})
	}
}

// TestListExactFixtureText pins the whole L-42 listing verbatim.
func TestListExactFixtureText(t *testing.T) {
	base := rdDir(t)
	ws := rdListFixture(t, base)
	res := rdCall(t, rdTools(t, toolfs.Config{}, rdLocal(t, base)).List(), nil, rdArgs(t, map[string]any{"path": ws}))
	require.False(t, res.IsError, res.Text)
	want := "<path>" + ws + "</path>\n" +
		"<type>directory</type>\n" +
		"<entries>\n" +
		"alpha.md (5 bytes, modified 2021-01-02T03:04:05Z)\n" +
		"broken-link (other: dangling symlink)\n" +
		"dir-skill/ (modified 1999-12-31T23:59:59Z)\n" +
		"zeta.md (4 bytes, modified 2022-06-07T06:09:10Z)\n" +
		"\n" +
		"(End of directory - total 4 entries)\n" +
		"</entries>"
	assert.Equal(t, want, res.Text)
}

// TestListDefaultPathWithoutSession: with no session the default path is
// the backend's own cwd.
func TestListDefaultPathWithoutSession(t *testing.T) {
	base := rdDir(t)
	ws := rdListFixture(t, base)
	res := rdCall(t, rdTools(t, toolfs.Config{}, rdLocal(t, ws)).List(), nil, `{}`)
	require.False(t, res.IsError, res.Text)
	assert.True(t, strings.HasPrefix(res.Text, "<path>"+ws+"</path>\n"), res.Text)
	v, ok := res.Value.(toolfs.ListValue)
	require.True(t, ok)
	assert.Equal(t, 4, v.TotalEntries)
}

// TestListSymlinkedCwd: a symlinked session cwd stays unresolved in the
// display path, as for read (T-13).
func TestListSymlinkedCwd(t *testing.T) {
	base := rdDir(t)
	ws := rdListFixture(t, base)
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(ws, link))
	res := rdCall(t, rdTools(t, toolfs.Config{}, rdLocal(t, base)).List(), session.New("s1", link), `{"limit":1}`)
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, rdListing(link, "alpha.md (5 bytes, modified 2021-01-02T03:04:05Z)\n\n(Showing entries 1-1 of 4. Use offset=2 to continue.)"), res.Text)
}

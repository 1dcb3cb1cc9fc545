//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// rdSparse writes lines numbered "line 1".. "line <lines>" to dir/name and
// extends the file with a hole to size bytes, so it costs no disk.
func rdSparse(t testing.TB, dir, name string, lines int, size int64) string {
	t.Helper()
	var b strings.Builder
	for n := 1; n <= lines; n++ {
		b.WriteString("line " + strconv.Itoa(n) + "\n")
	}
	p := rdFile(t, dir, name, b.String())
	require.NoError(t, os.Truncate(p, size))
	return p
}

// TestReadFooterWithinBudget (issue 14, item 12; spec decision 17): a window
// near the start of a 20 GiB file does not scan the file to count its lines:
// the footer says more lines follow and totalLines is absent.
func TestReadFooterWithinBudget(t *testing.T) {
	dir := rdDir(t)
	p := rdSparse(t, dir, "huge.txt", 20_000, 20<<30)
	read := rdTools(t, toolfs.Config{}, rdLocal(t, dir)).Read()
	cases := []struct {
		name, args, body string
	}{
		{
			name: "limit 1 of the first line", args: `{"file_path":"huge.txt","limit":1}`,
			body: "1: line 1\n\n(Showing lines 1-1; more lines follow. Use offset=2 to continue.)",
		},
		{
			name: "the last text line, followed by 20 GiB of NULs", args: `{"file_path":"huge.txt","offset":20000,"limit":1}`,
			body: "20000: line 20000\n\n(Showing lines 20000-20000; more lines follow. Use offset=20001 to continue.)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := rdCall(t, read, nil, tc.args)
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, rdEnvelope(p, tc.body), res.Text)
			v, ok := res.Value.(toolfs.ReadValue)
			require.True(t, ok)
			assert.Nil(t, v.TotalLines)
			b, err := json.Marshal(v)
			require.NoError(t, err)
			assert.NotContains(t, string(b), "totalLines", "T-90's totalLines is absent")
		})
	}
}

// TestReadKernelFiles (issue 14, item 9): reads cap what they read whatever
// size procfs reports. /proc/self/pagemap (size 0, gigabytes of binary) and
// /proc/kcore (a huge size) fail FS_NOT_TEXT at their first chunk without
// buffering them; /proc/kmsg, whose reads consume the kernel log, is refused
// FS_NOT_REGULAR_FILE without a read; an ordinary procfs text file (size 0
// too) reads. Each call allocates less than 64 MiB.
func TestReadKernelFiles(t *testing.T) {
	read := rdTools(t, toolfs.Config{}, rdLocal(t, "/")).Read()
	cases := []struct {
		path, text string // text: what the result starts with
		code       errcode.Code
	}{
		{path: "/proc/self/pagemap", code: fs.CodeNotText, text: `Error: cannot read "/proc/self/pagemap": binary file`},
		{path: "/proc/kcore", code: fs.CodeNotText, text: `Error: cannot read "/proc/kcore": binary file`},
		{
			path: "/proc/kmsg", code: fs.CodeNotRegularFile,
			text: `Error: cannot read "/proc/kmsg": not a regular file (a kernel stream that reading would consume)`,
		},
		{path: "/proc/self/status", text: "1: Name:"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skipf("%s: %v", tc.path, err)
			}
			if f, err := os.Open(tc.path); err != nil { //nolint:gosec // a fixed kernel file; opening reads nothing
				t.Skipf("%s is not readable by this process: %v", tc.path, err)
			} else {
				_ = f.Close()
			}
			// The kernel log's unread byte count (syslog(2) action 9):
			// a read of /proc/kmsg would lower it.
			unreadBefore, klogErr := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_UNREAD, nil)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res := rdCall(t, read, nil, `{"file_path":"`+tc.path+`","limit":1}`)
			runtime.ReadMemStats(&after)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated by the call")
			if tc.code == "" {
				require.False(t, res.IsError, res.Text)
				assert.Contains(t, res.Text, tc.text)
				return
			}
			require.True(t, res.IsError, res.Text)
			assert.EqualValues(t, tc.code, res.Code)
			assert.True(t, strings.HasPrefix(res.Text, tc.text), "%q starts with %q", res.Text, tc.text)
			if filepath.Base(tc.path) == "kmsg" && klogErr == nil {
				unreadAfter, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_UNREAD, nil)
				require.NoError(t, err)
				assert.GreaterOrEqual(t, unreadAfter, unreadBefore, "the kernel log was not consumed")
			}
		})
	}
}

// TestProgressReports (issue 14, build: progress on long reads and lists):
// with a Progress on the call, a streamed read reports the bytes fed so far
// out of the file's size, increasing, up to the whole file, and a list the
// names read so far (total unknown); without one nothing is reported and
// the result is the same.
func TestProgressReports(t *testing.T) {
	dir := rdDir(t)
	content := strings.Repeat("0123456789abcdef\n", 40_000) // 680,000 bytes, 11 chunks
	rdFile(t, dir, "big.txt", content)
	for i := range 3000 {
		rdFile(t, dir, "many/"+strconv.Itoa(i), "")
	}
	tools := rdTools(t, toolfs.Config{ReadStreamMinSize: 1}, rdLocal(t, dir))
	type report struct{ done, total float64 }
	run := func(tl *tool.Tool, args string, record bool) (tool.Result, []report) {
		var got []report
		call := tool.Call{ID: "c", Arguments: json.RawMessage(args)}
		if record {
			call.Progress = func(done, total float64, _ string) { got = append(got, report{done, total}) }
		}
		return tl.Handler(context.Background(), call), got
	}
	t.Run("read", func(t *testing.T) {
		res, got := run(tools.Read(), `{"file_path":"big.txt","offset":39999}`, true)
		require.False(t, res.IsError, res.Text)
		plain, none := run(tools.Read(), `{"file_path":"big.txt","offset":39999}`, false)
		assert.Equal(t, plain.Text, res.Text)
		assert.Empty(t, none)
		require.GreaterOrEqual(t, len(got), 10, "one report per 64 KiB chunk")
		for i, r := range got {
			assert.Equal(t, float64(len(content)), r.total)
			if i > 0 {
				assert.Greater(t, r.done, got[i-1].done)
			}
		}
		assert.Equal(t, float64(len(content)), got[len(got)-1].done)
	})
	t.Run("list", func(t *testing.T) {
		res, got := run(tools.List(), `{"path":"many","limit":1}`, true)
		require.False(t, res.IsError, res.Text)
		assert.Equal(t, []report{{1024, 0}, {2048, 0}}, got)
	})
}

package audit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
)

// t0 is the time of the first record readFixture writes.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// readFixture writes, through a Log rotating every few records, a log of
// records a call each: s1 reads /ws/a, s1 writes /ws/dir/b (denied), s2
// runs a command in /ws/dir, s2 edits /ws/dirc (approved), s1 reads a path
// with characters JSON escapes, a minute apart.
func readFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	recs := []audit.Record{
		{Session: "s1", Tool: "read", Paths: []string{"/ws/a"}, Decision: audit.Allowed, Outcome: audit.OK, Bytes: 5},
		{Session: "s1", Tool: "write", Paths: []string{"/ws/dir/b"}, Decision: audit.Denied, Marker: "[sandbox: denied]", Outcome: audit.Error, Code: "FS_DENIED"},
		{Session: "s2", Principal: "alice", Tool: "exec", Decision: audit.Allowed, Outcome: audit.OK, Command: &audit.Command{Line: "make test", Workdir: "/ws/dir", Journal: "not journaled"}},
		{Session: "s2", Principal: "alice", Tool: "edit", Paths: []string{"/ws/dirc"}, Decision: audit.Approved, Outcome: audit.OK, Changes: []audit.Change{{Path: "/ws/dirc", Before: "sha256:aa", After: "sha256:bb"}}},
		{Session: "s1", Tool: "read", Paths: []string{"/ws/<odd> & \"quoted\""}, Decision: audit.Allowed, Outcome: audit.OK},
	}
	for i, r := range recs {
		r.Time = t0.Add(time.Duration(i) * time.Minute)
		r.Call = fmt.Sprint(i)
		l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: 400, Keep: 10})
		require.NoError(t, err)
		l.Append(r)
		require.NoError(t, l.Close())
	}
	files, err := audit.Files(path)
	require.NoError(t, err)
	require.Greater(t, len(files), 2, "the fixture spans rotated files")
	return path
}

func TestReadFilters(t *testing.T) {
	path := readFixture(t)
	tests := []struct {
		name  string
		f     audit.Filter
		calls []string
	}{
		{"everything, oldest first across rotated files", audit.Filter{}, []string{"0", "1", "2", "3", "4"}},
		{"a session", audit.Filter{Session: "s2"}, []string{"2", "3"}},
		{"an unknown session", audit.Filter{Session: "s9"}, nil},
		{"a principal", audit.Filter{Principal: "alice"}, []string{"2", "3"}},
		{"a principal that is a prefix of another", audit.Filter{Principal: "ali"}, nil},
		{"one tool", audit.Filter{Tools: []string{"read"}}, []string{"0", "4"}},
		{"two tools", audit.Filter{Tools: []string{"write", "exec"}}, []string{"1", "2"}},
		{"a decision", audit.Filter{Decision: audit.Denied}, []string{"1"}},
		{"since, inclusive", audit.Filter{Since: t0.Add(3 * time.Minute)}, []string{"3", "4"}},
		{"until, exclusive", audit.Filter{Until: t0.Add(2 * time.Minute)}, []string{"0", "1"}},
		{"a window", audit.Filter{Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)}, []string{"1", "2"}},
		{"a path prefix is a directory: dir, not dirc", audit.Filter{Path: "/ws/dir"}, []string{"1", "2"}},
		{"a path prefix with a trailing slash", audit.Filter{Path: "/ws/dir/"}, []string{"1", "2"}},
		{"a path itself", audit.Filter{Path: "/ws/dirc"}, []string{"3"}},
		{"a path with characters JSON escapes", audit.Filter{Path: "/ws/<odd> & \"quoted\""}, []string{"4"}},
		{"filters combine", audit.Filter{Session: "s1", Tools: []string{"read"}, Since: t0.Add(time.Minute)}, []string{"4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			st, err := audit.Read(path, tt.f, func(r audit.Record, line []byte) error {
				calls = append(calls, r.Call)
				assert.True(t, tt.f.Match(r))
				assert.Contains(t, string(line), `"call":"`+r.Call+`"`, "the line is the record's own")
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, tt.calls, calls)
			assert.Zero(t, st.Skipped)
		})
	}
}

func TestReadSkipsWhatIsNotARecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	good := `{"time":"2026-12-01T10:00:00Z","tool":"read","decision":"allowed","outcome":"ok","duration_ms":0}`
	tests := []struct {
		name     string
		content  string
		want     int
		skipped  int
		wantFile int
	}{
		{"a torn last line", good + "\n" + `{"time":"2026-12-01T10:00:01Z","tool":"wr`, 1, 1, 1},
		{"a fragment ended by the next write", good + "\n" + `{"time":"2026-12-01T1` + "\n" + good + "\n", 2, 1, 1},
		{"an empty line", good + "\n\n" + good + "\n", 2, 1, 1},
		{"an empty file", "", 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o600))
			n := 0
			st, err := audit.Read(path, audit.Filter{}, func(audit.Record, []byte) error { n++; return nil })
			require.NoError(t, err)
			assert.Equal(t, tt.want, n)
			assert.Equal(t, tt.skipped, st.Skipped)
			assert.Equal(t, tt.wantFile, st.Files)
		})
	}
}

func TestReadLongLineAndStop(t *testing.T) {
	// A line longer than the read buffer: the log bounds what it writes
	// (MaxRecordBytes), but a log written before it did may hold one.
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	long := make([]string, 30000) // ~1.2 MB of paths
	for i := range long {
		long[i] = fmt.Sprintf("/ws/file-%06d", i)
	}
	var content []byte
	for _, r := range []audit.Record{{Time: t0, Tool: "glob", Paths: long}, {Time: t0, Tool: "read"}} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		content = append(append(content, b...), '\n')
	}
	require.NoError(t, os.WriteFile(path, content, 0o600))

	var tools []string
	_, err := audit.Read(path, audit.Filter{}, func(r audit.Record, _ []byte) error {
		tools = append(tools, r.Tool)
		if r.Tool == "glob" {
			assert.Len(t, r.Paths, len(long))
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"glob", "read"}, tools)

	stop := errors.New("stop")
	_, err = audit.Read(path, audit.Filter{}, func(audit.Record, []byte) error { return stop })
	require.ErrorIs(t, err, stop)
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	for _, n := range []string{"audit.jsonl", "audit.jsonl.1", "audit.jsonl.10", "audit.jsonl.2", "audit.jsonl.lock", "audit.jsonl.01", "audit.jsonl.x", "other.jsonl.3"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o600))
	}
	files, err := audit.Files(path)
	require.NoError(t, err)
	assert.Equal(t, []string{path + ".10", path + ".2", path + ".1", path}, files)

	files, err = audit.Files(filepath.Join(dir, "missing", "audit.jsonl"))
	require.NoError(t, err)
	assert.Empty(t, files)
}

package audit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
)

// record returns a record of tool numbered i (its Call), at a fixed time.
func record(tool string, i int) audit.Record {
	return audit.Record{
		Time:     time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second),
		Session:  "s1",
		Client:   "test 1.0",
		Tool:     tool,
		Call:     fmt.Sprint(i),
		Mode:     "workspace-write",
		Paths:    []string{"/ws/a.txt"},
		Decision: audit.Allowed,
		Outcome:  audit.OK,
		Bytes:    int64(i),
	}
}

// lines returns the lines of the file at path, each without its newline,
// failing when the file does not end with one.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return splitLines(t, b)
}

// splitLines splits b into lines, failing when it does not end with a
// newline.
func splitLines(t *testing.T, b []byte) []string {
	t.Helper()
	if len(b) == 0 {
		return nil
	}
	require.Equal(t, byte('\n'), b[len(b)-1], "whole lines only")
	var out []string
	for l := range bytes.SplitSeq(b[:len(b)-1], []byte("\n")) {
		out = append(out, string(l))
	}
	return out
}

// How long a test waits for the writer goroutine.
const (
	waitFor = 10 * time.Second
	tick    = 10 * time.Millisecond
)

// decode decodes each line as a Record.
func decode(t *testing.T, ls []string) []audit.Record {
	t.Helper()
	out := make([]audit.Record, 0, len(ls))
	for _, l := range ls {
		var r audit.Record
		require.NoError(t, json.Unmarshal([]byte(l), &r), "line %q", l)
		out = append(out, r)
	}
	return out
}

func TestLogWritesOneLinePerRecord(t *testing.T) {
	exit := 2
	tests := []struct {
		name string
		rec  audit.Record
		want string
	}{
		{
			name: "an allowed read",
			rec:  audit.Record{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Session: "s1", Client: "c 1", Tool: "read", Call: "7", Mode: "read-only", Paths: []string{"/ws/a"}, Decision: audit.Allowed, Outcome: audit.OK, Bytes: 12, DurationMS: 0.5},
			want: `{"time":"2026-12-01T10:00:00Z","session":"s1","client":"c 1","tool":"read","call":"7","mode":"read-only","paths":["/ws/a"],"decision":"allowed","outcome":"ok","bytes":12,"duration_ms":0.5}`,
		},
		{
			name: "a denied write keeps its marker",
			rec:  audit.Record{Time: time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC), Tool: "write", Paths: []string{"/etc/x"}, Decision: audit.Denied, Marker: "[sandbox: write outside]", Outcome: audit.Error, Code: "FS_DENIED"},
			want: `{"time":"2026-12-01T10:00:01Z","tool":"write","paths":["/etc/x"],"decision":"denied","marker":"[sandbox: write outside]","outcome":"error","code":"FS_DENIED","duration_ms":0}`,
		},
		{
			name: "a command with its exit and a change with its hashes",
			rec: audit.Record{
				Time: time.Date(2026, 12, 1, 10, 0, 2, 0, time.UTC), Tool: "exec", Decision: audit.Approved,
				Escalation: &audit.Escalation{What: "danger-full-access", Answer: "allowed-once", Scope: "once"},
				Outcome:    audit.OK, Changes: []audit.Change{{Path: "/ws/b", Before: "sha256:00", After: "sha256:11"}},
				Command: &audit.Command{Line: "make", Workdir: "/ws", Exit: &exit, Stdout: 3, Journal: "not journaled"},
			},
			want: `{"time":"2026-12-01T10:00:02Z","tool":"exec","decision":"approved","escalation":{"what":"danger-full-access","answer":"allowed-once","scope":"once"},"outcome":"ok","changes":[{"path":"/ws/b","before":"sha256:00","after":"sha256:11"}],"command":{"line":"make","workdir":"/ws","exit":2,"stdout_bytes":3,"stderr_bytes":0,"journal":"not journaled"},"duration_ms":0}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state", "harness", "audit.jsonl")
			l, err := audit.OpenLog(audit.LogOptions{Path: path})
			require.NoError(t, err)
			l.Append(tt.rec)
			require.NoError(t, l.Close())

			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.want+"\n", string(b))
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			di, err := os.Stat(filepath.Dir(path))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
		})
	}
}

func TestLogAppendsToAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("{\"tool\":\"earlier\"}\n"), 0o600))
	l, err := audit.OpenLog(audit.LogOptions{Path: path})
	require.NoError(t, err)
	l.Append(record("read", 1))
	require.NoError(t, l.Close())

	ls := lines(t, path)
	require.Len(t, ls, 2)
	assert.JSONEq(t, `{"tool":"earlier"}`, ls[0])
	assert.Equal(t, "1", decode(t, ls[1:])[0].Call)
}

func TestLogConcurrentAppendsAreEachOneWholeLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.OpenLog(audit.LogOptions{Path: path, Queue: 100000})
	require.NoError(t, err)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				l.Append(record(fmt.Sprintf("tool%d", w), i))
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Close())

	recs := decode(t, lines(t, path))
	require.Len(t, recs, workers*each)
	seen := map[string]int{}
	for _, r := range recs {
		assert.Zero(t, r.Lost)
		seen[r.Tool+"/"+r.Call]++
	}
	assert.Len(t, seen, workers*each, "each record exactly once")
	// Per writer, order is kept.
	next := map[string]int{}
	for _, r := range recs {
		assert.Equal(t, fmt.Sprint(next[r.Tool]), r.Call, r.Tool)
		next[r.Tool]++
	}
}

func TestLogCloseDrainsAndIgnoresLaterAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var stderr bytes.Buffer
	l, err := audit.OpenLog(audit.LogOptions{Path: path, Stderr: &stderr})
	require.NoError(t, err)
	for i := range 1000 {
		l.Append(record("read", i))
	}
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "a second Close does nothing")
	l.Append(record("read", 1000))

	assert.Len(t, lines(t, path), 1000)
	assert.Contains(t, stderr.String(), "appended after close")
}

func TestOpenLogRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tests := []struct {
		name string
		opts audit.LogOptions
	}{
		{"no path", audit.LogOptions{}},
		{"negative max bytes", audit.LogOptions{Path: filepath.Join(dir, "a.jsonl"), MaxBytes: -1}},
		{"a file where the directory goes", audit.LogOptions{Path: filepath.Join(file, "audit.jsonl")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := audit.OpenLog(tt.opts)
			require.Error(t, err)
			if tt.opts.Path != "" {
				assert.NoFileExists(t, tt.opts.Path)
			}
		})
	}
}

// A record json cannot encode (a time past year 9999) is still written:
// stamped now, its identifying fields kept, marked AUDIT_UNENCODABLE.
func TestLogKeepsAnUnencodableRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.OpenLog(audit.LogOptions{Path: path})
	require.NoError(t, err)
	before := time.Now().UTC()
	l.Append(audit.Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Session: "s1", Tool: "read", Call: "9", Decision: audit.Allowed, Outcome: audit.OK, Paths: []string{"/ws/a"}})
	require.NoError(t, l.Close())

	recs := decode(t, lines(t, path))
	require.Len(t, recs, 1)
	r := recs[0]
	assert.Equal(t, []string{"s1", "read", "9", audit.CodeUnencodable}, []string{r.Session, r.Tool, r.Call, r.Code})
	assert.Equal(t, audit.Error, r.Outcome)
	assert.False(t, r.Time.Before(before.Truncate(time.Second)))
}

// A log that is not a regular file (here a character device) is written
// and never rotated, and needs no lock file.
func TestLogOnADevice(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	require.NoError(t, os.Symlink("/dev/null", path))
	l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: 10})
	require.NoError(t, err)
	for i := range 100 {
		l.Append(record("read", i))
	}
	require.NoError(t, l.Close())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "no rotated file, no lock file")
}

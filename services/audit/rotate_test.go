package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
)

func TestLogRotatesBySize(t *testing.T) {
	tests := []struct {
		name    string
		keep    int
		records int
		// wantFiles are the files expected after records appends, one at a
		// time, each line 200-some bytes and MaxBytes 1000 (4 lines a file).
		wantFiles []string
	}{
		{"under the limit stays in one file", 3, 4, []string{"audit.jsonl"}},
		{"past the limit rotates", 3, 6, []string{"audit.jsonl", "audit.jsonl.1", "audit.jsonl.lock"}},
		{"keeps Keep rotated files, the oldest go", 2, 20, []string{"audit.jsonl", "audit.jsonl.1", "audit.jsonl.2", "audit.jsonl.lock"}},
		{"keep one", 1, 20, []string{"audit.jsonl", "audit.jsonl.1", "audit.jsonl.lock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			for i := range tt.records {
				// One Log per record: each batch is one record, so the
				// file boundaries are exact.
				l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: 1000, Keep: tt.keep})
				require.NoError(t, err)
				l.Append(record("read", i))
				require.NoError(t, l.Close())
			}
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
				fi, err := e.Info()
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
				if e.Name() != "audit.jsonl.lock" {
					assert.LessOrEqual(t, fi.Size(), int64(1000), e.Name())
				}
			}
			assert.Equal(t, tt.wantFiles, names)

			// The newest records survive, in order, oldest file first.
			var calls []string
			for i := tt.keep; i >= 1; i-- {
				if _, err := os.Stat(fmt.Sprintf("%s.%d", path, i)); err == nil {
					for _, r := range decode(t, lines(t, fmt.Sprintf("%s.%d", path, i))) {
						calls = append(calls, r.Call)
					}
				}
			}
			for _, r := range decode(t, lines(t, path)) {
				calls = append(calls, r.Call)
			}
			require.NotEmpty(t, calls)
			for i, c := range calls {
				assert.Equal(t, fmt.Sprint(tt.records-len(calls)+i), c)
			}
		})
	}
}

// Two logs on one file stand for two server processes: flock(2) locks
// belong to the open file, so two opens in one process contend as two
// processes do.
func TestLogRotationWithTwoWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	const each = 2000
	var logs [2]*audit.Log
	for i := range logs {
		l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: 16 << 10, Keep: 1000})
		require.NoError(t, err)
		logs[i] = l
	}
	var wg sync.WaitGroup
	for w, l := range logs {
		wg.Go(func() {
			for i := range each {
				l.Append(record(fmt.Sprintf("writer%d", w), i))
			}
		})
	}
	wg.Wait()
	for _, l := range logs {
		require.NoError(t, l.Close())
	}

	matches, err := filepath.Glob(path + ".*[0-9]")
	require.NoError(t, err)
	require.Greater(t, len(matches), 10, "the files rotated")
	seen := map[string]int{}
	for _, p := range append(matches, path) {
		for _, r := range decode(t, lines(t, p)) { // whole lines only
			assert.Zero(t, r.Lost)
			seen[r.Tool+"/"+r.Call]++
		}
	}
	assert.Len(t, seen, 2*each, "every record of both writers is kept")
	for k, n := range seen {
		assert.Equal(t, 1, n, k)
	}
}

package audit_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
)

// benchRecords is the size of the log `harness audit` must answer over in
// under a second (issue 25).
const benchRecords = 100_000

// writeBenchLog writes a log of n records as the server writes them: 100
// sessions, reads, writes, edits and commands, one in ten denied, a second
// apart; it returns its path.
func writeBenchLog(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(b, err)
	w := bufio.NewWriter(f)
	exit := 0
	for i := range n {
		r := audit.Record{
			Time: t0.Add(time.Duration(i) * time.Second), Session: fmt.Sprintf("session-%03d", i%100), Client: "claude-code 2.1.0",
			Call: fmt.Sprint(i), Mode: "workspace-write", Decision: audit.Allowed, Outcome: audit.OK, DurationMS: 1.25,
		}
		switch i % 4 {
		case 0:
			r.Tool, r.Paths, r.Bytes = "read", []string{fmt.Sprintf("/home/dev/project/src/pkg%02d/file%04d.go", i%50, i%1000)}, 4096
		case 1:
			r.Tool, r.Paths, r.Bytes = "write", []string{fmt.Sprintf("/home/dev/project/src/pkg%02d/file%04d.go", i%50, i%1000)}, 1024
			r.Changes = []audit.Change{{Path: r.Paths[0], Before: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", After: "sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752", Journal: "18ed4684a2ca99a8-6c4c1309"}}
		case 2:
			r.Tool, r.Paths = "edit", []string{fmt.Sprintf("/home/dev/project/src/pkg%02d/file%04d.go", i%50, i%1000)}
		default:
			r.Tool = "exec"
			r.Command = &audit.Command{Line: "go test ./...", Workdir: "/home/dev/project", Exit: &exit, Stdout: 2048, Journal: "not journaled"}
		}
		if i%10 == 0 {
			r.Decision, r.Outcome, r.Code, r.Marker = audit.Denied, audit.Error, "FS_DENIED", "[sandbox: write outside the writable roots]"
		}
		line, err := json.Marshal(r)
		require.NoError(b, err)
		_, _ = w.Write(append(line, '\n'))
	}
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
	return path
}

// BenchmarkRead reads a 100,000-record log with the filters `harness
// audit` takes: each op is one whole read of the file.
func BenchmarkRead(b *testing.B) {
	path := writeBenchLog(b, benchRecords)
	for _, bc := range []struct {
		name string
		f    audit.Filter
		want int
	}{
		{"all", audit.Filter{}, benchRecords},
		{"session", audit.Filter{Session: "session-042"}, benchRecords / 100},
		{"tool+decision", audit.Filter{Tools: []string{"read"}, Decision: audit.Denied}, benchRecords / 20},
		{"since-last-hour", audit.Filter{Since: t0.Add(time.Duration(benchRecords-3600) * time.Second)}, 3600},
		{"path", audit.Filter{Path: "/home/dev/project/src/pkg07"}, benchRecords / 100}, // the writes of pkg07: i%100 == 57
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				_, err := audit.Read(path, bc.f, func(audit.Record, []byte) error { n++; return nil })
				require.NoError(b, err)
				require.Equal(b, bc.want, n)
			}
		})
	}
}

package toolexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/exec"
)

// TestRecordRunBoundsRefusedHosts: a command the domain proxy refused
// 20,000 (40,000) names leaves a record, on disk, of at most
// audit.MaxRecordBytes listing the first audit.MaxList names and counting
// the rest; a few such commands leave every earlier record in the log.
func TestRecordRunBoundsRefusedHosts(t *testing.T) {
	tests := []struct {
		name    string
		refused int // hosts the result lists
		more    int // refusals the proxy counted past them
	}{
		{"20,000 names listed", 20000, 0},
		{"40,000 names listed", 40000, 0},
		{"the proxy's cap and 19,744 counted", exec.MaxRefused, 20000 - exec.MaxRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l, err := audit.OpenLog(audit.LogOptions{Path: path})
			require.NoError(t, err)
			start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			for i := range 10 {
				l.Append(audit.Record{Time: start, Session: "s1", Tool: "read", Call: "early-" + strconv.Itoa(i), Decision: audit.Allowed, Outcome: audit.OK})
			}
			conf := &exec.Confinement{RefusedMore: tt.more}
			for i := range tt.refused {
				conf.Refused = append(conf.Refused, exec.RefusedHost{Host: fmt.Sprintf("h%05d.example.com", i), Port: 443, Reason: "not in --allow-domain"})
			}
			allowed := make([]string, 5000)
			for i := range allowed {
				allowed[i] = fmt.Sprintf("a%04d.example.com", i)
			}
			const commands = 5
			for i := range commands {
				e := audit.Open(audit.Record{Time: start, Session: "s1", Tool: "exec", Call: "flood-" + strconv.Itoa(i)})
				ctx := audit.NewContext(context.Background(), e)
				recordCommand(ctx, call{command: "for h in $(seq 20000); do curl h$h.example.com; done"})
				recordRun(ctx, exec.Result{ExitCode: 7, Confinement: conf}, allowed, "[sandbox: network denied]")
				l.Append(e.Record())
			}
			require.NoError(t, l.Close())

			files, err := audit.Files(path)
			require.NoError(t, err)
			assert.Equal(t, []string{path}, files, "nothing rotated")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Less(t, len(b), 10*1024+commands*audit.MaxRecordBytes)

			var calls []string
			_, err = audit.Read(path, audit.Filter{}, func(r audit.Record, line []byte) error {
				calls = append(calls, r.Call)
				assert.LessOrEqual(t, len(line)+1, audit.MaxRecordBytes, r.Call)
				if r.Tool == "exec" {
					c := r.Command
					require.NotNil(t, c)
					assert.Len(t, c.HostsRefused, audit.MaxList)
					assert.Equal(t, "h00000.example.com", c.HostsRefused[0])
					assert.Equal(t, tt.refused+tt.more-audit.MaxList, c.HostsRefusedMore)
					assert.Len(t, c.HostsAllowed, audit.MaxList)
					assert.Equal(t, len(allowed)-audit.MaxList, c.HostsAllowedMore)
				}
				return nil
			})
			require.NoError(t, err)
			want := []string{}
			for i := range 10 {
				want = append(want, "early-"+strconv.Itoa(i))
			}
			for i := range commands {
				want = append(want, "flood-"+strconv.Itoa(i))
			}
			assert.Equal(t, want, calls, "every earlier record is still in the log")
		})
	}
}

// BenchmarkRecordRun40000: the record of a command refused 40,000 names
// (linear in the names; it was quadratic).
func BenchmarkRecordRun40000(b *testing.B) {
	conf := &exec.Confinement{}
	for i := range 40000 {
		conf.Refused = append(conf.Refused, exec.RefusedHost{Host: fmt.Sprintf("h%05d.example.com", i), Port: 443})
	}
	for b.Loop() {
		e := audit.Open(audit.Record{Tool: "exec"})
		ctx := audit.NewContext(context.Background(), e)
		recordCommand(ctx, call{command: "true"})
		recordRun(ctx, exec.Result{Confinement: conf}, nil, "")
		_ = e.Record()
	}
}

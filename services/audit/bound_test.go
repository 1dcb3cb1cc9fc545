package audit_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
)

// TestLogBoundsRecords: whatever a record holds, its line on disk is at
// most MaxRecordBytes, its lists keep their first items and count the
// rest, and its strings are cut with an ellipsis.
func TestLogBoundsRecords(t *testing.T) {
	many := func(n int, f string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(f, i)
		}
		return out
	}
	ctl := strings.Repeat("\x01", 100<<10) // six bytes each once escaped
	tests := []struct {
		name string
		r    audit.Record
		// check the record read back
		check func(t *testing.T, r audit.Record)
	}{
		{
			name: "20,000 refused hosts",
			r:    audit.Record{Tool: "exec", Command: &audit.Command{Line: "x", HostsRefused: many(20000, "h%05d.example.com")}},
			check: func(t *testing.T, r audit.Record) {
				assert.Equal(t, many(audit.MaxList, "h%05d.example.com"), r.Command.HostsRefused)
				assert.Equal(t, 20000-audit.MaxList, r.Command.HostsRefusedMore)
			},
		},
		{
			name: "every list long",
			r: audit.Record{
				Tool: "exec", Paths: many(1000, "/ws/p%d"), Changes: make([]audit.Change, 1000),
				Command: &audit.Command{Line: "x", Denials: many(1000, "d%d"), HostsAllowed: many(1000, "a%d"), HostsRefused: many(1000, "r%d")},
			},
			check: func(t *testing.T, r audit.Record) {
				assert.Len(t, r.Paths, audit.MaxList)
				assert.Equal(t, 1000-audit.MaxList, r.PathsMore)
				assert.Len(t, r.Changes, audit.MaxList)
				assert.Equal(t, 1000-audit.MaxList, r.ChangesMore)
				assert.Equal(t, 1000-audit.MaxList, r.Command.DenialsMore)
				assert.Equal(t, 1000-audit.MaxList, r.Command.HostsAllowedMore)
				assert.Equal(t, 1000-audit.MaxList, r.Command.HostsRefusedMore)
			},
		},
		{
			name: "long strings are cut",
			r:    audit.Record{Tool: "read", Client: strings.Repeat("c", 100<<10), Paths: []string{strings.Repeat("p", 100<<10)}},
			check: func(t *testing.T, r audit.Record) {
				assert.Equal(t, strings.Repeat("c", audit.MaxField-len(audit.Ellipsis))+audit.Ellipsis, r.Client)
				assert.Equal(t, strings.Repeat("p", audit.MaxField-len(audit.Ellipsis))+audit.Ellipsis, r.Paths[0])
			},
		},
		{
			name: "escaped strings in every field and list still fit",
			r: audit.Record{
				Tool: ctl, Session: ctl, Client: ctl, Principal: ctl, Call: ctl, Mode: ctl, Marker: ctl, Code: ctl,
				Paths:      []string{ctl + "1", ctl + "2", ctl + "3", ctl + "4", ctl + "5"},
				Changes:    []audit.Change{{Path: ctl, Before: ctl, After: ctl, Journal: ctl}, {Path: ctl + "2"}},
				Escalation: &audit.Escalation{What: ctl, Justification: ctl, Answer: ctl, Scope: ctl},
				Command:    &audit.Command{Line: ctl, Workdir: ctl, Signal: ctl, Journal: ctl, Denials: []string{ctl}, HostsAllowed: []string{ctl}, HostsRefused: []string{ctl}},
			},
			check: func(t *testing.T, r audit.Record) {
				assert.True(t, strings.HasSuffix(r.Tool, audit.Ellipsis))
				assert.Equal(t, 5, len(r.Paths)+r.PathsMore)
				assert.Equal(t, 2, len(r.Changes)+r.ChangesMore)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l, err := audit.OpenLog(audit.LogOptions{Path: path})
			require.NoError(t, err)
			tt.r.Time = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			l.Append(tt.r)
			require.NoError(t, l.Close())
			ls := lines(t, path)
			require.Len(t, ls, 1)
			assert.LessOrEqual(t, len(ls[0])+1, audit.MaxRecordBytes)
			tt.check(t, decode(t, ls)[0])
		})
	}
}

// TestLogSessionBudget: a session that keeps calling while Admit lets it
// (as the guard does) with records of the largest size cannot rotate
// anything out of the log, its own first record included; its first
// refused call is recorded once, with the code; the server's refusals of
// its calls past the budget are not written; another session still runs.
func TestLogSessionBudget(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int64
		keep     int
	}{
		{"keep 3", 256 << 10, 3},
		{"keep 1", 256 << 10, 1},
		{"keep 5", 128 << 10, 5},
		{"keep 8, rotating", 64 << 10, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			var stderr strings.Builder
			l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: tt.maxBytes, Keep: tt.keep, Stderr: &stderr})
			require.NoError(t, err)
			at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			l.Append(audit.Record{Time: at, Session: "other", Tool: "write", Call: "evidence", Decision: audit.Allowed, Outcome: audit.OK})
			l.Append(audit.Record{Time: at, Session: "flood", Tool: "delete", Call: "own-evidence", Decision: audit.Allowed, Outcome: audit.OK})
			big := strings.Repeat("\x01", audit.MaxField)
			var ran int
			var refusal error
			for i := range 100000 {
				r := audit.Record{Time: at, Session: "flood", Tool: "exec", Call: fmt.Sprint("flood-", i)}
				if refusal = l.Admit(r); refusal != nil {
					break
				}
				ran++
				r.Decision, r.Outcome, r.Paths = audit.Allowed, audit.OK, []string{big + "1", big + "2", big + "3"}
				l.Append(r)
			}
			require.Error(t, refusal, "the budget ends the flood")
			var be *audit.BudgetError
			require.True(t, errors.As(refusal, &be))
			assert.Equal(t, int64(tt.keep)*tt.maxBytes/4, be.Budget)
			// More refused calls, and the server's refusals, write nothing.
			for i := range 100 {
				r := audit.Record{Time: at, Session: "flood", Tool: "exec", Call: fmt.Sprint("late-", i)}
				require.Error(t, l.Admit(r))
				r.Decision, r.Outcome, r.Code = audit.Refused, audit.Error, "SERVER_BUSY"
				l.Append(r)
			}
			require.NoError(t, l.Admit(audit.Record{Session: "other", Tool: "read"}), "another session runs")
			require.NoError(t, l.Close())

			var calls []string
			codes := map[string]string{}
			_, err = audit.Read(path, audit.Filter{}, func(r audit.Record, line []byte) error {
				calls = append(calls, r.Call)
				codes[r.Call] = r.Code
				return nil
			})
			require.NoError(t, err)
			require.NotEmpty(t, calls)
			assert.Equal(t, "evidence", calls[0], "the other session's record stays")
			assert.Equal(t, "own-evidence", calls[1], "the session's own earlier record stays")
			assert.Len(t, calls, 2+ran+1, "every call that ran, and the first refusal")
			assert.Equal(t, string(audit.CodeSessionBudget), codes[fmt.Sprint("flood-", ran)])
			assert.NotContains(t, calls, "late-0")
			assert.Equal(t, 1, strings.Count(stderr.String(), "its calls are refused"))
		})
	}
}

// TestOpenLogRefusesALargeBudget: a session budget that could rotate a
// session's own records out is refused.
func TestOpenLogRefusesALargeBudget(t *testing.T) {
	_, err := audit.OpenLog(audit.LogOptions{Path: filepath.Join(t.TempDir(), "a.jsonl"), MaxBytes: 1000, Keep: 2, SessionBudget: 501})
	require.ErrorContains(t, err, "at most 500")
}

package metrics

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
)

type keep struct{ got []audit.Record }

func (k *keep) Append(r audit.Record) { k.got = append(k.got, r) }

func exit(n int) *int { return &n }

// TestSinkCounts (issue 39): each record is counted by tool, decision and
// code, its duration observed, an exec's end classified and its refused
// hosts added; the record then reaches the next sink unchanged.
func TestSinkCounts(t *testing.T) {
	m := New()
	next := &keep{}
	s := m.Sink(next)
	records := []audit.Record{
		{Tool: "read", Decision: audit.Allowed, Outcome: audit.OK, DurationMS: 2},
		{Tool: "write", Decision: audit.Denied, Outcome: audit.Error, Code: "FS_SANDBOX_DENIED", DurationMS: 1},
		{Tool: "exec", Decision: audit.Allowed, Outcome: audit.OK, DurationMS: 30, Command: &audit.Command{Exit: exit(0), StartMS: 20, RunMS: 9}},
		{Tool: "exec", Decision: audit.Denied, Outcome: audit.Error, Code: "SANDBOX_NETWORK_DENIED", Command: &audit.Command{Exit: exit(1), HostsRefused: []string{"a", "b"}, HostsRefusedMore: 3}},
		{Tool: "exec", Decision: audit.Allowed, Outcome: audit.Error, Code: "EXEC_TIMED_OUT", Command: &audit.Command{Signal: "SIGKILL"}},
		{Tool: "exec", Decision: audit.Allowed, Outcome: audit.OK, Command: &audit.Command{Background: true}},
		{Tool: "exec", Decision: audit.Allowed, Outcome: audit.Error, Code: "SANDBOX_UNAVAILABLE", Command: &audit.Command{}},
		{Tool: "exec", Decision: audit.Invalid, Outcome: audit.Error, Code: "INVALID_ARGUMENT"},
		{Tool: "exec_input", Decision: audit.Allowed, Outcome: audit.OK, Command: &audit.Command{Background: true, Input: "x"}},
	}
	for _, r := range records {
		s.Append(r)
	}
	assert.Equal(t, records, next.got)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("read", "allowed", "")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("write", "denied", "FS_SANDBOX_DENIED")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("exec_input", "allowed", "")))
	for end, want := range map[string]float64{"exit_zero": 1, "exit_nonzero": 1, "signal": 1, "background": 1, "not_run": 2} {
		assert.Equal(t, want, testutil.ToFloat64(m.commands.WithLabelValues(end)), end)
	}
	assert.Equal(t, 5.0, testutil.ToFloat64(m.refused))
	// The command allowed that never started counts as a start failure;
	// the one refused as invalid does not.
	assert.Equal(t, 1.0, testutil.ToFloat64(m.failures.WithLabelValues("SANDBOX_UNAVAILABLE")))
	assert.Equal(t, 1, testutil.CollectAndCount(m.failures))
	// One command's start and run measured: observed once each.
	assert.Equal(t, 1, testutil.CollectAndCount(m.starts))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Contains(t, rec.Body.String(), "harness_command_start_seconds_sum 0.02\n")
	assert.Contains(t, rec.Body.String(), "harness_command_start_seconds_count 1\n")
	assert.Contains(t, rec.Body.String(), "harness_command_run_seconds_sum 0.009\n")
	assert.Contains(t, rec.Body.String(), "harness_command_run_seconds_count 1\n")
	assert.Equal(t, 8, testutil.CollectAndCount(m.calls), "two exec calls allowed and ok share a series")
	// A nil next is the audit log turned off.
	m.Sink(nil).Append(records[0])
	assert.Equal(t, 2.0, testutil.ToFloat64(m.calls.WithLabelValues("read", "allowed", "")))
}

// TestJournal (issue 39): the journal's bytes and dropped entries are read
// at each scrape.
func TestJournal(t *testing.T) {
	m := New()
	var bytes, dropped int64 = 4096, 0
	m.Journal(func() (int64, int64) { return bytes, dropped })
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Contains(t, rec.Body.String(), "harness_journal_bytes 4096\n")
	assert.Contains(t, rec.Body.String(), "harness_journal_entries_dropped_total 0\n")
	bytes, dropped = 100, 7
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Contains(t, rec.Body.String(), "harness_journal_bytes 100\n")
	assert.Contains(t, rec.Body.String(), "harness_journal_entries_dropped_total 7\n")
}

// TestLabelsBounded (issue 39): past MaxLabelValues distinct codes,
// principals or tools, the rest are counted as Other.
func TestLabelsBounded(t *testing.T) {
	m := New()
	for i := range MaxLabelValues + 10 {
		m.Sink(nil).Append(audit.Record{Tool: "read", Decision: audit.Denied, Code: "CODE_" + strconv.Itoa(i)})
		m.SlotWait("call", "principal-"+strconv.Itoa(i), time.Millisecond)
	}
	assert.Equal(t, MaxLabelValues+1, testutil.CollectAndCount(m.calls))
	assert.Equal(t, 10.0, testutil.ToFloat64(m.calls.WithLabelValues("read", "denied", Other)))
	assert.Equal(t, MaxLabelValues+1, testutil.CollectAndCount(m.waits))
}

// TestGaugesAndHandler: the per-principal gauges are read at each scrape
// (principals past the bound summed as Other) and the audit log's counts
// are exported; the handler serves them in the text format.
func TestGaugesAndHandler(t *testing.T) {
	m := New()
	sessions := map[string]int{"alice": 2, "": 1}
	m.Sessions(func() map[string]int { return sessions })
	m.Background(func() map[string]int { return map[string]int{"alice": 3} })
	m.AuditLog(func() (int64, int64) { return 7, 2 })
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	body := rec.Body.String()
	for _, line := range []string{
		`harness_sessions{principal=""} 1`, `harness_sessions{principal="alice"} 2`,
		`harness_background_commands{principal="alice"} 3`,
		`harness_audit_records_written_total 7`, `harness_audit_records_lost_total 2`,
	} {
		assert.Contains(t, body, line+"\n")
	}
	sessions = map[string]int{"alice": 1}
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Contains(t, rec.Body.String(), `harness_sessions{principal="alice"} 1`+"\n")
	assert.NotContains(t, rec.Body.String(), `harness_sessions{principal=""}`)
}

// BenchmarkSinkAppend is what counting one call's record costs (issue 39:
// the metrics' cost on a call), against a read's record.
func BenchmarkSinkAppend(b *testing.B) {
	s := New().Sink(nil)
	r := audit.Record{Tool: "read", Decision: audit.Allowed, Outcome: audit.OK, DurationMS: 0.2, Bytes: 700}
	b.ReportAllocs()
	for b.Loop() {
		s.Append(r)
	}
}

// admitting is a sink with the audit log's budget check.
type admitting struct{ keep }

func (a *admitting) Admit(r audit.Record) error {
	if r.Session == "flood" {
		return &audit.BudgetError{Session: r.Session}
	}
	return nil
}

// TestSinkAdmitsAsTheLogDoes: the audit log's per-session budget still
// refuses through the metrics' sink (the guard asks the outer sink).
func TestSinkAdmitsAsTheLogDoes(t *testing.T) {
	s := New().Sink(&admitting{})
	a, ok := s.(audit.Admitter)
	require.True(t, ok)
	assert.Error(t, a.Admit(audit.Record{Session: "flood"}))
	assert.NoError(t, a.Admit(audit.Record{Session: "calm"}))
	assert.NoError(t, New().Sink(nil).(audit.Admitter).Admit(audit.Record{Session: "flood"}), "no log, no budget")
}

package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/telemetry"
	"github.com/dsh-go/harness/services/telemetry/otlptest"
)

// records is a known sequence: a read allowed, a write denied, a command
// that exited 0 (its line redacted as toolexec records it).
func records() []audit.Record {
	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	zero := 0
	return []audit.Record{
		{
			Time: start, Session: "s-1", Principal: "alice", Tool: "read", Mode: "workspace-write", Paths: []string{"/ws/notes.txt"},
			Decision: audit.Allowed, Outcome: audit.OK, Bytes: 12, DurationMS: 1.5,
		},
		{
			Time: start.Add(time.Second), Session: "s-1", Principal: "alice", Tool: "write", Mode: "workspace-write",
			Decision: audit.Denied, Outcome: audit.Error, Code: "FS_SANDBOX_DENIED", DurationMS: 0.25,
		},
		{
			Time: start.Add(2 * time.Second), Session: "s-1", Principal: "alice", Tool: "exec", Mode: "workspace-write",
			Decision: audit.Allowed, Outcome: audit.OK, DurationMS: 40,
			Command: &audit.Command{Line: audit.RedactCommand("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 make test"), Exit: &zero},
		},
	}
}

// TestExportSpansLogsAndMetrics (issue 39): each call's record goes out as
// a span (its tool, decision, code, session, principal and duration) and a
// log record (the audit record as JSON, in the span's trace), the metrics
// as OTLP metrics; no token the command line held is sent.
func TestExportSpansLogsAndMetrics(t *testing.T) {
	rcv := otlptest.NewReceiver(t)
	m := metrics.New()
	e, err := telemetry.Open(telemetry.Options{Endpoint: rcv.URL(), Version: "v9.9.9", Metrics: m, MetricInterval: time.Hour})
	require.NoError(t, err)
	sink := m.Sink(e.Sink(nil))
	recs := records()
	for _, r := range recs {
		sink.Append(r)
	}
	require.Eventually(t, func() bool { s, l := rcv.Counts(); return s == 3 && l == 3 }, 10*time.Second, 10*time.Millisecond)
	// The metrics go out at each interval and a last time at Close.
	require.NoError(t, e.Close(context.Background()))

	got := rcv.Got()
	for i, sp := range got.Spans {
		r := recs[i]
		assert.Equal(t, r.Tool, sp.Name)
		assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, sp.Kind)
		assert.Equal(t, uint64(r.Time.UnixNano()), sp.StartTimeUnixNano)
		assert.Equal(t, uint64(r.Time.Add(time.Duration(r.DurationMS*1e6)).UnixNano()), sp.EndTimeUnixNano)
		a := otlptest.Attributes(sp.Attributes)
		assert.Equal(t, r.Tool, a["harness.tool"])
		assert.Equal(t, string(r.Decision), a["harness.decision"])
		assert.Equal(t, "s-1", a["harness.session"])
		assert.Equal(t, "alice", a["harness.principal"])
		assert.Equal(t, r.DurationMS, a["harness.duration_ms"])
		if r.Code != "" {
			assert.Equal(t, r.Code, a["harness.code"])
			assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, sp.Status.Code)
		} else {
			assert.NotContains(t, a, "harness.code")
		}
		lr := got.Logs[i]
		assert.Equal(t, "harness.audit", lr.EventName)
		assert.Equal(t, sp.TraceId, lr.TraceId, "the log record is in its call's trace")
		assert.Equal(t, sp.SpanId, lr.SpanId)
		want, err := json.Marshal(r)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), lr.Body.GetStringValue())
	}
	assert.Equal(t, "GITHUB_TOKEN=[REDACTED] make test", otlptest.Attributes(got.Spans[2].Attributes)["harness.command.line"])
	assert.Equal(t, int64(0), otlptest.Attributes(got.Spans[2].Attributes)["harness.command.exit"])
	assert.NotContains(t, string(got.Raw), "ghp_abcdef", "no token is sent")
	assert.Contains(t, string(got.Raw), "v9.9.9", "the resource names the version")
	assert.Contains(t, got.Metrics, "harness_tool_calls_total", "the metrics are exported")
	for _, signal := range []string{"traces", "logs", "metrics"} {
		assert.Equal(t, 0.0, lost(t, m, signal), signal)
	}
}

// lost is harness_otlp_lost_total{signal}, -1 when it is not exported.
func lost(t *testing.T, m *metrics.Metrics, signal string) float64 {
	t.Helper()
	mfs, err := m.Gatherer().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "harness_otlp_lost_total" {
			continue
		}
		for _, x := range mf.GetMetric() {
			for _, l := range x.GetLabel() {
				if l.GetName() == "signal" && l.GetValue() == signal {
					return x.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// TestExportNeverWaitsAndCountsWhatIsLost (issue 39): with the receiver
// unreachable, appending takes no wait and every span and log record is
// counted lost; with a receiver that does not answer, the records the
// full queue cannot take are counted, and what was sent plus what was
// counted lost is every record.
func TestExportNeverWaitsAndCountsWhatIsLost(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		m := metrics.New()
		// Port 1 on loopback: refused at once.
		e, err := telemetry.Open(telemetry.Options{Endpoint: "http://127.0.0.1:1", Metrics: m, MetricInterval: time.Hour})
		require.NoError(t, err)
		sink := e.Sink(nil)
		for range 5 {
			for _, r := range records() {
				sink.Append(r)
			}
		}
		_ = e.Close(context.Background())
		assert.Equal(t, 15.0, lost(t, m, "traces"))
		assert.Equal(t, 15.0, lost(t, m, "logs"))
		assert.GreaterOrEqual(t, lost(t, m, "metrics"), 1.0, "the last metrics export at Close")
	})
	t.Run("paused after a failure, then resumed", func(t *testing.T) {
		rcv := otlptest.NewReceiver(t)
		rcv.Refuse(http.StatusBadRequest)
		m := metrics.New()
		// Far longer than the exporter needs to take a record on a
		// loaded machine (CI saw more than a second at load 14).
		const pause = 5 * time.Second
		e, err := telemetry.Open(telemetry.Options{Endpoint: rcv.URL(), Metrics: m, MetricInterval: time.Hour, Pause: pause})
		require.NoError(t, err)
		sink := e.Sink(nil)
		sink.Append(records()[0])
		require.Eventually(t, func() bool { return lost(t, m, "traces") == 1 && lost(t, m, "logs") == 1 }, 10*time.Second, 5*time.Millisecond,
			"the refused span and log record")
		failed := time.Now() // both pauses began before this
		rcv.Refuse(0)
		sink.Append(records()[1]) // within the pause: counted lost, not sent
		require.Eventually(t, func() bool { return lost(t, m, "traces") == 2 && lost(t, m, "logs") == 2 }, 10*time.Second, 5*time.Millisecond,
			"the record appended within the pause")
		require.Less(t, time.Since(failed), pause, "the record was taken within the pause")
		time.Sleep(pause + 100*time.Millisecond - time.Since(failed))
		sink.Append(records()[2]) // the pause is over: sent
		require.NoError(t, e.Close(context.Background()))
		spans, logs := rcv.Counts()
		assert.Equal(t, 1, spans)
		assert.Equal(t, 1, logs)
		assert.Equal(t, "exec", rcv.Got().Spans[0].Name)
		assert.Equal(t, 2.0, lost(t, m, "traces"))
	})
	t.Run("queue full", func(t *testing.T) {
		rcv := otlptest.NewReceiver(t)
		rcv.Hold() // the receiver takes requests and does not answer
		m := metrics.New()
		e, err := telemetry.Open(telemetry.Options{Endpoint: rcv.URL(), Metrics: m, Queue: 4, Batch: 2, MetricInterval: time.Hour})
		require.NoError(t, err)
		sink := e.Sink(nil)
		const n = 60
		start := time.Now()
		for i := range n {
			sink.Append(records()[i%3])
		}
		appended := time.Since(start)
		assert.Greater(t, lost(t, m, "traces"), 0.0, "the queue of 4 could not take %d records", n)
		rcv.Release()
		require.NoError(t, e.Close(context.Background()))
		spans, logs := rcv.Counts()
		assert.Equal(t, float64(n), float64(spans)+lost(t, m, "traces"), "sent %d spans", spans)
		assert.Equal(t, float64(n), float64(logs)+lost(t, m, "logs"), "sent %d log records", logs)
		t.Logf("%d appends took %v against a receiver that did not answer", n, appended)
	})
}

// TestEnabledAndCheckEndpoint: the export is on with an endpoint or a
// standard variable naming one, off with OTEL_SDK_DISABLED=true; an
// endpoint is the base URL of an OTLP/HTTP receiver.
func TestEnabledAndCheckEndpoint(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	assert.False(t, telemetry.Enabled("", env()))
	assert.True(t, telemetry.Enabled("http://c:4318", env()))
	for _, v := range telemetry.EnvEndpoints {
		assert.True(t, telemetry.Enabled("", env(v, "http://c:4318")), v)
	}
	assert.False(t, telemetry.Enabled("http://c:4318", env("OTEL_SDK_DISABLED", "true")))
	assert.False(t, telemetry.Enabled("", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_SDK_DISABLED", "TRUE")))
	assert.True(t, telemetry.Enabled("", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_SDK_DISABLED", "false")))

	for _, ok := range []string{"http://127.0.0.1:4318", "https://collector.example/otlp", "http://[::1]:4318/"} {
		assert.NoError(t, telemetry.CheckEndpoint(ok), ok)
	}
	for _, bad := range []string{"collector:4318", "127.0.0.1:4318", "ftp://c", "http://", "http://c:4318?x=1", "http://c#f", "http://u:p@c:4318", "grpc://c:4317", ""} {
		err := telemetry.CheckEndpoint(bad)
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), "is not the base URL of an OTLP/HTTP receiver")
		}
	}
	_, err := telemetry.Open(telemetry.Options{Endpoint: "collector:4318", Metrics: metrics.New()})
	assert.Error(t, err, "Open checks the endpoint")
}

// admitting is a sink with the audit log's budget check.
type admitting struct{}

func (admitting) Append(audit.Record) {}
func (admitting) Admit(r audit.Record) error {
	if r.Session == "flood" {
		return &audit.BudgetError{Session: r.Session}
	}
	return nil
}

// TestSinkAdmitsAsTheLogDoes: the audit log's per-session budget still
// refuses through the export's sink and the metrics' around it, as the
// server chains them.
func TestSinkAdmitsAsTheLogDoes(t *testing.T) {
	m := metrics.New()
	e, err := telemetry.Open(telemetry.Options{Endpoint: "http://127.0.0.1:1", Metrics: m, MetricInterval: time.Hour})
	require.NoError(t, err)
	defer func() { _ = e.Close(context.Background()) }()
	a, ok := m.Sink(e.Sink(admitting{})).(audit.Admitter)
	require.True(t, ok)
	assert.Error(t, a.Admit(audit.Record{Session: "flood"}))
	assert.NoError(t, a.Admit(audit.Record{Session: "calm"}))
}

// TestExportIsBoundedAsTheLog: a record past the audit log's bounds (a
// client name of 100 KiB, 10,000 refused hosts) goes out as the log holds
// it: its body one bounded line, no attribute past audit.MaxField.
func TestExportIsBoundedAsTheLog(t *testing.T) {
	rcv := otlptest.NewReceiver(t)
	m := metrics.New()
	e, err := telemetry.Open(telemetry.Options{Endpoint: rcv.URL(), Metrics: m, MetricInterval: time.Hour})
	require.NoError(t, err)
	r := records()[2]
	r.Client = strings.Repeat("c", 100<<10)
	hosts := make([]string, 10000)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("%0200d.example", i)
	}
	c := *r.Command
	c.HostsRefused = hosts
	r.Command = &c
	e.Sink(nil).Append(r)
	require.NoError(t, e.Close(context.Background()))
	got := rcv.Got()
	require.Len(t, got.Logs, 1)
	require.Len(t, got.Spans, 1)
	body := got.Logs[0].Body.GetStringValue()
	assert.LessOrEqual(t, len(body), audit.MaxRecordBytes)
	assert.Equal(t, strings.TrimSuffix(string(audit.EncodeBounded(r)), "\n"), body, "the audit log's line")
	for _, a := range [][]*commonpb.KeyValue{got.Spans[0].Attributes, got.Logs[0].Attributes} {
		for k, v := range otlptest.Attributes(a) {
			if s, ok := v.(string); ok {
				assert.LessOrEqual(t, len(s), audit.MaxField, k)
			}
		}
	}
}

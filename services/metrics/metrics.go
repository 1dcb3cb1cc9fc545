// Package metrics is the server's Prometheus metrics (issue 39): what each
// tool call decided and how long it took, how the commands ended and the
// hosts the network proxy refused them, the live sessions per principal,
// and what the audit log wrote and lost. They live in a registry of their
// own (with the Go runtime's and the process's collectors) and are served by
// Handler: at /metrics of the HTTP front end, behind its authentication, and
// at --metrics-listen, without any.
//
// Every label value is bounded: tool names are those the server serves
// (records come from its guard), decisions and codes are the server's own
// constants, and at most MaxLabelValues tools, principals and codes are
// told apart (the rest are counted as "other"). No path, command line, host or file content is ever a label
// or a value.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dsh-go/harness/services/audit"
)

// MaxLabelValues bounds the distinct values of an open label (principal,
// code); values past it are counted as Other.
const MaxLabelValues = 64

// Other is the label value of the calls, codes and principals past the
// bounds.
const Other = "other"

// Metrics is the server's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	commands *prometheus.CounterVec
	starts   prometheus.Histogram
	failures *prometheus.CounterVec
	runs     prometheus.Histogram
	refused  prometheus.Counter
	proxy    *prometheus.CounterVec
	waits    *prometheus.HistogramVec
	otlpLost *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]map[string]bool // label name -> values told apart
}

// New returns the server's metrics, zero.
func New() *Metrics {
	m := &Metrics{
		reg:  prometheus.NewRegistry(),
		seen: map[string]map[string]bool{},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_tool_calls_total",
			Help: "Tool calls by tool, the sandbox's decision (allowed, denied, approved, declined, invalid, refused) and the result's code (empty when it succeeded).",
		}, []string{"tool", "decision", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "harness_tool_call_duration_seconds",
			Help:    "How long tool calls took, from the guard's start to the result, in seconds, by tool (exec: the command's run included).",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120, 600},
		}, []string{"tool"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_commands_total",
			Help: "exec calls by how the command went: exit_zero, exit_nonzero, signal (a signal or a timeout ended it), background (started in the background or interactively), not_run (refused or failed to start; harness_tool_calls_total's code says why).",
		}, []string{"end"}),
		starts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "harness_command_start_seconds",
			Help:    "The sandbox's own cost of starting a foreground command, in seconds: from the runner's call to the shell's exec (the view's searches, bubblewrap, the stage's checks and confinement); measured under the bubblewrap isolation only.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_command_start_failures_total",
			Help: "exec calls the sandbox allowed whose command never started, by the result's code (SANDBOX_UNAVAILABLE, EXEC_START_FAILED, ...): the cause.",
		}, []string{"code"}),
		runs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "harness_command_run_seconds",
			Help:    "Foreground commands' wall time as the runner measured it, in seconds.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800},
		}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "harness_slot_wait_seconds",
			Help:    "How long calls waited for a call slot (slot=call) and commands for a command slot (slot=command), in seconds, by principal (\"\" over stdio); a wait refused (SERVER_BUSY) or cancelled counts too.",
			Buckets: []float64{0.0001, 0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 300},
		}, []string{"slot", "principal"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harness_command_hosts_refused_total",
			Help: "Network hosts the domain proxy refused commands, each host counted once per exec call that met it.",
		}),
		proxy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_proxy_requests_total",
			Help: "Requests (HTTP, CONNECT, SOCKS5) the domain proxy decided for commands, by outcome: allowed, refused (the host is not allowed, or resolves to a non-public address), failed (an allowed name that did not resolve).",
		}, []string{"outcome"}),
	}
	m.otlpLost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_otlp_lost_total",
		Help: "What the OTLP export (--otlp-endpoint) did not send, by signal: traces and logs count spans and log records (a call's record the export queue could not take counts one of each), metrics count metric exports the receiver did not accept.",
	}, []string{"signal"})
	for _, o := range []string{"allowed", "refused", "failed"} {
		m.proxy.WithLabelValues(o) // each at 0 from the start
	}
	m.reg.MustRegister(m.calls, m.duration, m.commands, m.starts, m.failures, m.runs, m.refused, m.proxy, m.waits, m.otlpLost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format (or OpenMetrics,
// when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Sink returns an audit.Sink that counts each call's record, then hands it
// to next (nil: none, when the audit log is off).
func (m *Metrics) Sink(next audit.Sink) audit.Sink { return &sink{m: m, next: next} }

type sink struct {
	m    *Metrics
	next audit.Sink
}

func (s *sink) Append(r audit.Record) {
	s.m.observe(r)
	if s.next != nil {
		s.next.Append(r)
	}
}

// Admit is next's (audit.Admitter: the audit log's per-session budget);
// nil when next has none.
func (s *sink) Admit(r audit.Record) error { return audit.AdmitBy(s.next, r) }

// observe counts one call's record.
func (m *Metrics) observe(r audit.Record) {
	tool := m.bounded("tool", r.Tool)
	m.calls.WithLabelValues(tool, string(r.Decision), m.bounded("code", r.Code)).Inc()
	m.duration.WithLabelValues(tool).Observe(r.DurationMS / 1000)
	if r.Tool != "exec" {
		return
	}
	c := r.Command
	end := "not_run"
	switch {
	case c == nil:
	case c.Signal != "":
		end = "signal"
	case c.Exit != nil && *c.Exit == 0:
		end = "exit_zero"
	case c.Exit != nil:
		end = "exit_nonzero"
	case c.Background && r.Outcome == audit.OK:
		end = "background"
	}
	m.commands.WithLabelValues(end).Inc()
	if end == "not_run" && r.Decision == audit.Allowed && r.Code != "" {
		m.failures.WithLabelValues(m.bounded("code", r.Code)).Inc()
	}
	if c != nil {
		if c.StartMS > 0 {
			m.starts.Observe(c.StartMS / 1000)
		}
		if c.RunMS > 0 {
			m.runs.Observe(c.RunMS / 1000)
		}
		m.refused.Add(float64(len(c.HostsRefused) + c.HostsRefusedMore))
	}
}

// ProxyDecided counts one decision of the domain proxy by its outcome
// ("allowed", "refused", "failed"; netproxy.Config.Decided).
func (m *Metrics) ProxyDecided(outcome string) {
	m.proxy.WithLabelValues(outcome).Inc()
}

// OTLPLost counts n items of signal ("traces", "logs", "metrics") the
// OTLP export did not send (services/telemetry).
func (m *Metrics) OTLPLost(signal string, n int) {
	m.otlpLost.WithLabelValues(signal).Add(float64(n))
}

// Gatherer is the registry the metrics are in, for an exporter that
// reads them (services/telemetry's OTLP metrics).
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// SlotWait counts one wait of principal for a slot ("call" or "command").
func (m *Metrics) SlotWait(slot, principal string, d time.Duration) {
	m.waits.WithLabelValues(slot, m.bounded("principal", principal)).Observe(d.Seconds())
}

// bounded returns value as a value of label: itself while at most
// MaxLabelValues distinct values were seen, Other past them.
func (m *Metrics) bounded(label, value string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.seen[label]
	if seen == nil {
		seen = map[string]bool{}
		m.seen[label] = seen
	}
	if seen[value] {
		return value
	}
	if len(seen) >= MaxLabelValues {
		return Other
	}
	seen[value] = true
	return value
}

// AuditLog exports the audit log's counts (audit.Log.Counts): records
// written and lost since it was opened.
func (m *Metrics) AuditLog(counts func() (written, lost int64)) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "harness_audit_records_written_total",
			Help: "Audit records the audit log wrote (on disk and synced) since the server started.",
		}, func() float64 { w, _ := counts(); return float64(w) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "harness_audit_records_lost_total",
			Help: "Audit records the audit log lost (its queue was full, or a write failed) since the server started; the next record written says how many.",
		}, func() float64 { _, l := counts(); return float64(l) }),
	)
}

// Journal exports the journal's size and dropped entries: stats(), read
// at each scrape, returns the bytes its segments hold on disk and the
// entries this server dropped to stay within --journal-max-bytes
// (journal.Journal.Stats).
func (m *Metrics) Journal(stats func() (bytes, dropped int64)) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "harness_journal_bytes",
			Help: "Bytes the change journal's segments hold on disk (every server sharing it included); it stays under --journal-max-bytes.",
		}, func() float64 { b, _ := stats(); return float64(b) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "harness_journal_entries_dropped_total",
			Help: "Journal entries (changes that could be undone) this server dropped, the oldest first, to stay within --journal-max-bytes.",
		}, func() float64 { _, d := stats(); return float64(d) }),
	)
}

// Sessions exports the live sessions by principal: by(), read at each
// scrape, maps each principal (over stdio: "") to its live sessions.
func (m *Metrics) Sessions(by func() map[string]int) {
	m.reg.MustRegister(&perPrincipal{m: m, by: by, desc: prometheus.NewDesc(
		"harness_sessions", "Live MCP sessions by principal (over stdio, one with principal \"\").", []string{"principal"}, nil)})
}

// Background exports the running background and interactive commands by
// principal: by(), read at each scrape.
func (m *Metrics) Background(by func() map[string]int) {
	m.reg.MustRegister(&perPrincipal{m: m, by: by, desc: prometheus.NewDesc(
		"harness_background_commands", "Running background and interactive commands by principal.", []string{"principal"}, nil)})
}

// perPrincipal is a gauge per principal read at each scrape.
type perPrincipal struct {
	m    *Metrics
	by   func() map[string]int
	desc *prometheus.Desc
}

func (p *perPrincipal) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *perPrincipal) Collect(ch chan<- prometheus.Metric) {
	sums := map[string]int{}
	for principal, n := range p.by() {
		sums[p.m.bounded("principal", principal)] += n
	}
	for principal, n := range sums {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n), principal)
	}
}

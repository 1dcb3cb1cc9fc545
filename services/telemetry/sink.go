package telemetry

import (
	"bytes"
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/audit"
)

// Signals, the values of harness_otlp_lost_total's label.
const (
	signalTraces  = "traces"
	signalLogs    = "logs"
	signalMetrics = "metrics"
)

// maxBatchBytes bounds the log records' bodies one request carries: a
// batch is sent in parts past it, so a receiver's body limit (commonly a
// few MiB) does not refuse every session's records for one large one.
const maxBatchBytes = 2 << 20

// Sink returns an audit.Sink that queues each call's record for export,
// then hands it to next (nil: none). A record the full queue cannot take,
// or that comes while both signals are paused, is lost (a span and a log
// record) and counted; Append never waits.
func (e *Exporter) Sink(next audit.Sink) audit.Sink { return &sink{e: e, next: next} }

type sink struct {
	e    *Exporter
	next audit.Sink
}

func (s *sink) Append(r audit.Record) {
	s.e.enqueue(r)
	if s.next != nil {
		s.next.Append(r)
	}
}

// Admit is next's (audit.Admitter: the audit log's per-session budget);
// nil when next has none.
func (s *sink) Admit(r audit.Record) error { return audit.AdmitBy(s.next, r) }

// enqueue puts r on the queue, or counts it lost when the queue is full or
// closed, or both signals are paused.
func (e *Exporter) enqueue(r audit.Record) {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed || (e.paused(signalTraces) && e.paused(signalLogs)) {
		e.lostBoth(1)
		return
	}
	select {
	case e.queue <- r:
	default:
		e.lostBoth(1)
	}
}

// paused reports whether signal's export is paused after a failure.
func (e *Exporter) paused(signal string) bool {
	return time.Now().UnixNano() < e.pausedUntil[signal].Load()
}

// pause stops signal's export for Options.Pause.
func (e *Exporter) pause(signal string) {
	e.pausedUntil[signal].Store(time.Now().Add(e.opts.Pause).UnixNano())
}

// lostBoth counts n records lost to both signals.
func (e *Exporter) lostBoth(n int) {
	e.lost(signalTraces, n)
	e.lost(signalLogs, n)
}

// run exports the queue in batches of at most Options.Batch until the
// queue is closed and empty.
func (e *Exporter) run() {
	defer close(e.done)
	batch := make([]audit.Record, 0, e.opts.Batch)
	for r := range e.queue {
		batch = append(batch[:0], r)
	more:
		for len(batch) < e.opts.Batch {
			select {
			case r, ok := <-e.queue:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		e.export(batch)
	}
}

// export sends batch's spans and log records, each signal in one request
// per maxBatchBytes of bodies (the exporters retry as
// OTEL_EXPORTER_OTLP_* say), and counts what was not accepted. A failure
// pauses that signal (Options.Pause); a signal paused, or an exporter
// stopped by a Close that could not wait, counts its part of the batch
// lost without making it.
func (e *Exporter) export(batch []audit.Record) {
	if e.stopped.Load() {
		e.lostBoth(len(batch))
		return
	}
	spans, logs := !e.paused(signalTraces), !e.paused(signalLogs)
	if !spans {
		e.lost(signalTraces, len(batch))
	}
	if !logs {
		e.lost(signalLogs, len(batch))
	}
	if !spans && !logs {
		return
	}
	size := 0
	for _, r := range batch {
		size += e.emit(r, spans, logs)
		if size >= maxBatchBytes {
			e.send()
			size = 0
		}
	}
	e.send()
}

// send exports what emit made, each signal in one request.
func (e *Exporter) send() {
	ctx := context.Background()
	if spans := e.spans.take(); len(spans) > 0 {
		if err := e.spanOut.ExportSpans(ctx, spans); err != nil {
			e.pause(signalTraces) // before the count: who sees the loss sees the pause
			e.lost(signalTraces, len(spans))
			e.warn(signalTraces, len(spans), err)
		}
	}
	if records := e.records.take(); len(records) > 0 {
		if err := e.logOut.Export(ctx, records); err != nil {
			e.pause(signalLogs)
			e.lost(signalLogs, len(records))
			e.warn(signalLogs, len(records), err)
		}
	}
}

// emit makes r's span (spans) and log record (logs), collected for the
// next send, and returns the log record's body size. r is bounded as the
// audit log bounds it (audit.Bound, audit.EncodeBounded): what goes out
// is what the log holds.
func (e *Exporter) emit(r audit.Record, spans, logs bool) int {
	r = audit.Bound(r)
	end := r.Time.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
	attrs := attributes(r)
	ctx := context.Background()
	if spans {
		var span trace.Span
		ctx, span = e.tracer.Start(ctx, r.Tool,
			trace.WithTimestamp(r.Time), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		if r.Outcome != audit.OK {
			span.SetStatus(codes.Error, r.Code)
		}
		span.End(trace.WithTimestamp(end))
	}
	if !logs {
		return 0
	}
	var rec otellog.Record
	rec.SetEventName("harness.audit")
	rec.SetTimestamp(r.Time)
	rec.SetObservedTimestamp(end)
	rec.SetSeverity(otellog.SeverityInfo)
	rec.SetSeverityText("INFO")
	if r.Outcome != audit.OK {
		rec.SetSeverity(otellog.SeverityWarn)
		rec.SetSeverityText("WARN")
	}
	body := bytes.TrimSuffix(audit.EncodeBounded(r), []byte("\n"))
	rec.SetBody(attribute.StringValue(string(body)))
	rec.AddAttributes(attrs...)
	e.logger.Emit(ctx, rec)
	return len(body)
}

// attributes are the fields of a bounded record r a span and a log record
// carry: who, what and how it went, and for a command its line (redacted
// and cut as the audit log has it), exit and signal; never a path, a
// file's content or a command's output.
func attributes(r audit.Record) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("harness.tool", r.Tool),
		attribute.String("harness.decision", string(r.Decision)),
		attribute.String("harness.outcome", string(r.Outcome)),
		attribute.Float64("harness.duration_ms", r.DurationMS),
	}
	for _, kv := range []struct{ k, v string }{
		{"harness.code", r.Code},
		{"harness.mode", r.Mode},
		{"harness.session", r.Session},
		{"harness.principal", r.Principal},
		{"harness.client", r.Client},
		{"harness.call", r.Call},
	} {
		if kv.v != "" {
			attrs = append(attrs, attribute.String(kv.k, kv.v))
		}
	}
	if c := r.Command; c != nil {
		attrs = append(attrs, attribute.String("harness.command.line", c.Line))
		if c.Exit != nil {
			attrs = append(attrs, attribute.Int("harness.command.exit", *c.Exit))
		}
		if c.Signal != "" {
			attrs = append(attrs, attribute.String("harness.command.signal", c.Signal))
		}
		if c.Background {
			attrs = append(attrs, attribute.Bool("harness.command.background", true))
		}
	}
	return attrs
}

// lost counts n items of signal that were not sent.
func (e *Exporter) lost(signal string, n int) { e.opts.Metrics.OTLPLost(signal, n) }

// warn logs an export failure of signal ("sdk": an error the SDK reported
// itself), at most once a minute for each.
func (e *Exporter) warn(signal string, n int, err error) {
	e.warnMu.Lock()
	defer e.warnMu.Unlock()
	now := time.Now()
	if now.Sub(e.warned[signal]) < time.Minute {
		return
	}
	e.warned[signal] = now
	if signal == "sdk" {
		e.opts.Log.Warn("OTLP export: the SDK reported an error (logged at most once a minute)", zap.Error(err))
		return
	}
	e.opts.Log.Warn("OTLP export failed; counted in harness_otlp_lost_total (logged at most once a minute per signal)",
		zap.String("signal", signal), zap.Int("lost", n), zap.Error(err))
}

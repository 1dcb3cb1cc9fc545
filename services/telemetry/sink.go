package telemetry

import (
	"context"
	"encoding/json"
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

// Sink returns an audit.Sink that queues each call's record for export,
// then hands it to next (nil: none). A record the full queue cannot take
// is lost (a span and a log record) and counted; Append never waits.
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

// enqueue puts r on the queue, or counts it lost when the queue is full or
// closed.
func (e *Exporter) enqueue(r audit.Record) {
	defer func() {
		// Appended after Close: the queue is closed.
		if recover() != nil {
			e.lost(signalTraces, 1)
			e.lost(signalLogs, 1)
		}
	}()
	if e.paused() {
		e.lost(signalTraces, 1)
		e.lost(signalLogs, 1)
		return
	}
	select {
	case e.queue <- r:
	default:
		e.lost(signalTraces, 1)
		e.lost(signalLogs, 1)
	}
}

// paused reports whether the export is paused after a failure.
func (e *Exporter) paused() bool { return time.Now().UnixNano() < e.pausedUntil.Load() }

// pause stops the export for Options.Pause.
func (e *Exporter) pause() { e.pausedUntil.Store(time.Now().Add(e.opts.Pause).UnixNano()) }

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
// (the exporters retry as OTEL_EXPORTER_OTLP_* say), and counts what was
// not accepted; a failure pauses the export (Options.Pause), and a batch
// taken while it is paused is counted lost without being made.
func (e *Exporter) export(batch []audit.Record) {
	if e.paused() {
		// Queued before the failure that paused the export.
		e.lost(signalTraces, len(batch))
		e.lost(signalLogs, len(batch))
		return
	}
	for _, r := range batch {
		e.emit(r)
	}
	ctx := context.Background()
	if spans := e.spans.take(); len(spans) > 0 {
		if err := e.spanOut.ExportSpans(ctx, spans); err != nil {
			e.pause() // before the count: who sees the loss sees the pause
			e.lost(signalTraces, len(spans))
			e.warn(signalTraces, len(spans), err)
		}
	}
	if records := e.records.take(); len(records) > 0 {
		if err := e.logOut.Export(ctx, records); err != nil {
			e.pause() // before the count: who sees the loss sees the pause
			e.lost(signalLogs, len(records))
			e.warn(signalLogs, len(records), err)
		}
	}
}

// emit makes r's span and log record, collected for the next export.
func (e *Exporter) emit(r audit.Record) {
	end := r.Time.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
	attrs := spanAttributes(r)
	ctx, span := e.tracer.Start(context.Background(), r.Tool,
		trace.WithTimestamp(r.Time), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	if r.Outcome != audit.OK {
		span.SetStatus(codes.Error, r.Code)
	}
	span.End(trace.WithTimestamp(end))

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
	body, err := json.Marshal(r)
	if err != nil {
		body = []byte(`{"error":"the record could not be encoded"}`)
	}
	rec.SetBody(attribute.StringValue(string(body)))
	rec.AddAttributes(attrs...)
	e.logger.Emit(ctx, rec)
}

// spanAttributes are the fields of r a span and a log record carry: none
// holds a path, a command line or content.
func spanAttributes(r audit.Record) []attribute.KeyValue {
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

// warn logs an export failure, at most once a minute.
func (e *Exporter) warn(signal string, n int, err error) {
	e.warnMu.Lock()
	defer e.warnMu.Unlock()
	if now := time.Now(); now.Sub(e.warned) >= time.Minute {
		e.warned = now
		e.opts.Log.Warn("OTLP export failed; counted in harness_otlp_lost_total (logged at most once a minute)",
			zap.String("signal", signal), zap.Int("lost", n), zap.Error(err))
	}
}

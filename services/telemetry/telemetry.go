// Package telemetry exports what the server records over OpenTelemetry's
// OTLP/HTTP (issue 39): each tool call as a span and its audit record as a
// log record, and the server's metrics (services/metrics) as OTLP metrics.
//
// Nothing here waits on the receiver during a call: a call's record is put
// on a bounded queue (Sink) and one goroutine exports the queue in batches;
// a record the full queue cannot take, and a batch the receiver did not
// accept, are counted in harness_otlp_lost_total by signal (traces, logs,
// metrics) and never retried past the exporters' own retries; a failure
// pauses that signal for Options.Pause. What goes out is what the audit
// log holds, bounded as it bounds it (audit.Bound, audit.EncodeBounded: no
// file content, no output, command lines redacted and cut): spans carry
// the tool, decision, code, outcome, mode, session, principal, client,
// call id, the call's duration and a command's line, exit and signal; log
// records carry the audit record itself as the log's JSON line. The
// protocol is OTLP/HTTP with protobuf (OTEL_EXPORTER_OTLP_PROTOCOL is not
// read).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	promb "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/metrics"
)

// Defaults of Options.
const (
	// DefaultQueue is how many calls' records wait for export at most.
	DefaultQueue = 1024
	// DefaultBatch is how many records one export sends at most.
	DefaultBatch = 512
	// DefaultCloseTimeout bounds how long Close sends what is queued.
	DefaultCloseTimeout = 5 * time.Second
	// DefaultPause is how long the export stops after the receiver
	// refused or missed a batch: the records of that time are counted lost
	// without being made, so an unreachable receiver costs the calls
	// nothing but a clock read.
	DefaultPause = 5 * time.Second
)

// EnvEndpoints are the standard variables that name a receiver; with any
// of them set (and no --otlp-endpoint) the exporters take their endpoints
// from the environment. OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _CERTIFICATE and their per-signal forms are read by the exporters too.
var EnvEndpoints = []string{
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
}

// Enabled reports whether the server exports over OTLP: an endpoint was
// given (--otlp-endpoint), or one of EnvEndpoints is set, and
// OTEL_SDK_DISABLED is not "true".
func Enabled(endpoint string, getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if endpoint != "" {
		return true
	}
	for _, v := range EnvEndpoints {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}

// CheckEndpoint returns an error when endpoint is not the base URL of an
// OTLP/HTTP receiver: http or https, a host, no query or fragment.
func CheckEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not the base URL of an OTLP/HTTP receiver (such as http://127.0.0.1:4318)", endpoint)
	}
	return nil
}

// Options configure Open.
type Options struct {
	// Endpoint is the receiver's base URL (--otlp-endpoint): the signals
	// go to its /v1/traces, /v1/logs and /v1/metrics. "" takes the
	// endpoints from the environment (EnvEndpoints).
	Endpoint string
	// Version is the server's version (the resource's service.version).
	Version string
	// Metrics are exported as OTLP metrics and count what was lost.
	// Required.
	Metrics *metrics.Metrics
	// Log gets export failures, at most one a minute. Nil: none.
	Log *zap.Logger
	// Queue, Batch and Pause default to DefaultQueue, DefaultBatch and
	// DefaultPause.
	Queue, Batch int
	Pause        time.Duration
	// MetricInterval is how often metrics are exported; 0 reads
	// OTEL_METRIC_EXPORT_INTERVAL (the SDK's default: 60 s).
	MetricInterval time.Duration
}

// Exporter exports the server's records and metrics. Its Sink is safe for
// concurrent use; Close ends it.
type Exporter struct {
	opts    Options
	traces  *sdktrace.TracerProvider
	tracer  trace.Tracer
	spans   *spanCollector
	spanOut sdktrace.SpanExporter
	logs    *sdklog.LoggerProvider
	logger  otellog.Logger
	records *logCollector
	logOut  sdklog.Exporter
	meters  *sdkmetric.MeterProvider

	queue chan audit.Record
	done  chan struct{}
	// pausedUntil is, for traces and logs, when their export resumes
	// after a failure (Unix nanoseconds; 0: not paused).
	pausedUntil map[string]*atomic.Int64
	// closeMu guards closed and the queue's closing against a send.
	closeMu sync.RWMutex
	closed  bool
	// stopped is set when Close stopped waiting for the queue: what the
	// goroutine takes after it is counted lost.
	stopped   atomic.Bool
	closeOnce sync.Once
	warnMu    sync.Mutex
	warned    map[string]time.Time // signal ("sdk" too) -> last warning
}

// Open returns an exporter to opts.Endpoint (or the environment's
// endpoints), exporting until Close. Errors: a bad Endpoint
// (CheckEndpoint), or an exporter the environment's settings cannot make.
func Open(opts Options) (*Exporter, error) {
	if opts.Metrics == nil {
		return nil, errors.New("telemetry: Options.Metrics is required")
	}
	if opts.Endpoint != "" {
		if err := CheckEndpoint(opts.Endpoint); err != nil {
			return nil, err
		}
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.Pause <= 0 {
		opts.Pause = DefaultPause
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	ctx := context.Background()
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "harness"), attribute.String("service.version", opts.Version)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: the resource: %w", err)
	}
	e := &Exporter{
		opts: opts, queue: make(chan audit.Record, opts.Queue), done: make(chan struct{}),
		spans: &spanCollector{}, records: &logCollector{},
		pausedUntil: map[string]*atomic.Int64{signalTraces: {}, signalLogs: {}},
		warned:      map[string]time.Time{},
	}

	var traceOpts []otlptracehttp.Option
	var logOpts []otlploghttp.Option
	var metricOpts []otlpmetrichttp.Option
	if opts.Endpoint != "" {
		base := strings.TrimSuffix(opts.Endpoint, "/")
		traceOpts = append(traceOpts, otlptracehttp.WithEndpointURL(base+"/v1/traces"))
		logOpts = append(logOpts, otlploghttp.WithEndpointURL(base+"/v1/logs"))
		metricOpts = append(metricOpts, otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"))
	}
	if e.spanOut, err = otlptracehttp.New(ctx, traceOpts...); err != nil {
		return nil, fmt.Errorf("telemetry: the trace exporter: %w", err)
	}
	if e.logOut, err = otlploghttp.New(ctx, logOpts...); err != nil {
		return nil, fmt.Errorf("telemetry: the log exporter: %w", err)
	}
	metricOut, err := otlpmetrichttp.New(ctx, metricOpts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: the metric exporter: %w", err)
	}
	// Attribute values are bounded already (audit.Bound); the limits
	// keep it so whatever a record holds.
	e.traces = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(e.spans),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit: audit.MaxField, AttributeCountLimit: 32,
			EventCountLimit: -1, LinkCountLimit: -1, AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1,
		}))
	e.tracer = e.traces.Tracer(scope)
	e.logs = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(e.records),
		sdklog.WithAttributeValueLengthLimit(audit.MaxField), sdklog.WithAttributeCountLimit(32))
	e.logger = e.logs.Logger(scope)
	var readerOpts []sdkmetric.PeriodicReaderOption
	if opts.MetricInterval > 0 {
		readerOpts = append(readerOpts, sdkmetric.WithInterval(opts.MetricInterval))
	}
	readerOpts = append(readerOpts, sdkmetric.WithProducer(promb.NewMetricProducer(promb.WithGatherer(opts.Metrics.Gatherer()))))
	e.meters = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&countedMetrics{Exporter: metricOut, m: opts.Metrics}, readerOpts...)))
	// The SDK's own errors (a metrics export that failed) are logged as
	// export failures are, not printed on stderr.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { e.warn("sdk", 0, err) }))
	for _, signal := range []string{signalTraces, signalLogs, signalMetrics} {
		opts.Metrics.OTLPLost(signal, 0) // each at 0 from the start
	}
	go e.run()
	return e, nil
}

// scope is the instrumentation scope of the spans and log records.
const scope = "github.com/dsh-go/harness"

// Close sends what is queued (for at most DefaultCloseTimeout, or ctx's
// deadline when sooner; what is left then is counted lost), exports the
// metrics a last time and stops the exporters (within DefaultCloseTimeout
// more). It returns the exporters' shutdown errors. Records appended after
// it are counted lost.
func (e *Exporter) Close(ctx context.Context) error {
	var err error
	e.closeOnce.Do(func() {
		e.closeMu.Lock()
		e.closed = true
		close(e.queue)
		e.closeMu.Unlock()
		drain, cancel := context.WithTimeout(ctx, DefaultCloseTimeout)
		select {
		case <-e.done:
		case <-drain.Done():
			e.stopped.Store(true)
		}
		cancel()
		// The last metrics export and the exporters' shutdown get a
		// bound of their own, whatever the draining took.
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultCloseTimeout)
		defer cancel()
		err = errors.Join(e.meters.Shutdown(shut), e.traces.Shutdown(shut), e.logs.Shutdown(shut),
			e.spanOut.Shutdown(shut), e.logOut.Shutdown(shut))
	})
	return err
}

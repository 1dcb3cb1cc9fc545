package telemetry

import (
	"context"
	"sync"

	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dsh-go/harness/services/metrics"
)

// pending keeps what the SDK hands a processor until the exporting
// goroutine takes it: Exporter's span and log processors are these, so one
// goroutine exports both signals in batches and knows exactly what the
// receiver did not accept.
type pending[T any] struct {
	mu    sync.Mutex
	items []T
}

func (p *pending[T]) add(v T) {
	p.mu.Lock()
	p.items = append(p.items, v)
	p.mu.Unlock()
}

// take returns what was kept and starts anew.
func (p *pending[T]) take() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	items := p.items
	p.items = nil
	return items
}

// spanCollector is the trace provider's span processor.
type spanCollector struct{ pending[sdktrace.ReadOnlySpan] }

func (c *spanCollector) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *spanCollector) OnEnd(s sdktrace.ReadOnlySpan)                   { c.add(s) }
func (c *spanCollector) Shutdown(context.Context) error                  { return nil }
func (c *spanCollector) ForceFlush(context.Context) error                { return nil }

// logCollector is the logger provider's log processor.
type logCollector struct{ pending[sdklog.Record] }

func (c *logCollector) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (c *logCollector) Shutdown(context.Context) error                         { return nil }
func (c *logCollector) ForceFlush(context.Context) error                       { return nil }

// OnEmit keeps a copy of r: the SDK reuses it.
func (c *logCollector) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.add(r.Clone())
	return nil
}

// countedMetrics counts each metric export the receiver did not accept.
type countedMetrics struct {
	sdkmetric.Exporter
	m *metrics.Metrics
}

func (c *countedMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := c.Exporter.Export(ctx, rm)
	if err != nil {
		c.m.OTLPLost(signalMetrics, 1)
	}
	return err
}

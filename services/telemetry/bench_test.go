package telemetry_test

import (
	"context"
	"testing"

	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/telemetry"
)

// BenchmarkAppend is what a call's record costs the call (issue 39): the
// metrics alone, and the metrics with the OTLP export to a receiver that
// refuses every connection (its records all counted lost).
func BenchmarkAppend(b *testing.B) {
	r := records()[2]
	b.Run("metrics", func(b *testing.B) {
		sink := metrics.New().Sink(nil)
		b.ReportAllocs()
		for b.Loop() {
			sink.Append(r)
		}
	})
	b.Run("metrics+otlp-unreachable", func(b *testing.B) {
		m := metrics.New()
		e, err := telemetry.Open(telemetry.Options{Endpoint: "http://127.0.0.1:1", Metrics: m})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = e.Close(context.Background()) }()
		sink := m.Sink(e.Sink(nil))
		b.ReportAllocs()
		for b.Loop() {
			sink.Append(r)
		}
	})
}

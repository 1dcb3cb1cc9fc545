// Package otlptest is an in-process OTLP/HTTP receiver for tests: it keeps
// the spans, log records and metric names it was sent, decoded, and every
// body as received, so a test can check what left the server.
package otlptest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Received is what a Receiver was sent, in order.
type Received struct {
	Spans []*tracepb.Span
	Logs  []*logspb.LogRecord
	// Metrics are the names of the metrics of every metrics export.
	Metrics []string
	// Raw is every request body, uncompressed, concatenated.
	Raw []byte
}

// Receiver serves /v1/traces, /v1/logs and /v1/metrics (protobuf, gzip or
// not) until the test ends.
type Receiver struct {
	srv    *httptest.Server
	hold   sync.RWMutex
	mu     sync.Mutex
	got    Received
	status int // answered instead of taking a request (Refuse); 0: none
}

// Refuse makes the receiver answer every request with the HTTP status
// (400: not retried by the exporters), keeping nothing; 0 ends it.
func (r *Receiver) Refuse(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// NewReceiver starts a receiver, closed when t ends.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the receiver's base URL (an --otlp-endpoint).
func (r *Receiver) URL() string { return r.srv.URL }

// Hold makes the receiver take requests without answering until Release.
func (r *Receiver) Hold() { r.hold.Lock() }

// Release ends Hold.
func (r *Receiver) Release() { r.hold.Unlock() }

// Got returns a copy of what was received so far.
func (r *Receiver) Got() Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Received{
		Spans:   append([]*tracepb.Span(nil), r.got.Spans...),
		Logs:    append([]*logspb.LogRecord(nil), r.got.Logs...),
		Metrics: append([]string(nil), r.got.Metrics...),
		Raw:     append([]byte(nil), r.got.Raw...),
	}
}

// Counts returns how many spans and log records were received.
func (r *Receiver) Counts() (spans, logs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got.Spans), len(r.got.Logs)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.hold.RLock()
	defer r.hold.RUnlock()
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != 0 {
		http.Error(w, "refused by the test", r.status)
		return
	}
	switch req.URL.Path {
	case "/v1/traces":
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.got.Spans = append(r.got.Spans, ss.Spans...)
			}
		}
	case "/v1/logs":
		var m collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rl := range m.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				r.got.Logs = append(r.got.Logs, sl.LogRecords...)
			}
		}
	case "/v1/metrics":
		var m colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, x := range sm.Metrics {
					r.got.Metrics = append(r.got.Metrics, x.Name)
				}
			}
		}
	default:
		http.NotFound(w, req)
		return
	}
	r.got.Raw = append(r.got.Raw, b...)
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// Attributes maps each attribute's key to its value (string, int64,
// float64 or bool).
func Attributes(kvs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			out[kv.Key] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.Key] = v.BoolValue
		}
	}
	return out
}

package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
)

// BenchmarkServeCall measures one MCP tool call end to end through the
// composed server over in-memory transports (JSON-RPC, the SDK, the tool,
// the backend): the server's per-call cost, for profiling.
func BenchmarkServeCall(b *testing.B) {
	kib := strings.Repeat("0123456789abcde\n", 64)
	for _, name := range []string{"read", "write"} {
		b.Run(name, func(b *testing.B) {
			w := newLoadWorld(b)
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			_, err := w.srv.MCP().Connect(ctx, st, nil)
			require.NoError(b, err)
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs, err := client.Connect(ctx, ct, nil)
			require.NoError(b, err)
			defer cs.Close() //nolint:errcheck // benchmark cleanup
			call := func(tool string, args map[string]any) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %v", tool, err, res)
				}
			}
			call("write", map[string]any{"file_path": "bench.txt", "content": kib})
			call("read", map[string]any{"file_path": "bench.txt"})
			b.ResetTimer()
			for range b.N {
				if name == "read" {
					call("read", map[string]any{"file_path": "bench.txt"})
				} else {
					call("write", map[string]any{"file_path": "bench.txt", "content": kib})
				}
			}
		})
	}
}

// BenchmarkConcurrentHugeLists makes 16 list calls at once on one connection,
// each of the largest window (1,000 entries) of a directory of 1,000,000
// entries, under a call cap of 4 and, for comparison, of 16 (issue 14, items
// 11 and 13). It reports the peak heap in use during the calls and the time
// of one round of 16. The directory is made under os.TempDir() and removed
// at the end.
func BenchmarkConcurrentHugeLists(b *testing.B) {
	if testing.Short() {
		b.Skip("creates 1,000,000 files")
	}
	const entries, calls = 1_000_000, 16
	base, err := os.MkdirTemp(os.TempDir(), "mcpserver-bench-")
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(base) })
	many := filepath.Join(base, "many")
	fixture.Many(b, many, entries)
	wantFooter := "(Showing entries 1-1000 of " + strconv.Itoa(entries) + ". Use offset=1001 to continue.)"

	for _, maxCalls := range []int{4, 16} {
		b.Run("cap-"+strconv.Itoa(maxCalls), func(b *testing.B) {
			w := newCappedWorld(b, maxCalls)
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			_, err := w.srv.MCP().Connect(ctx, st, nil)
			require.NoError(b, err)
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs, err := client.Connect(ctx, ct, nil)
			require.NoError(b, err)
			defer cs.Close() //nolint:errcheck // benchmark cleanup

			runtime.GC()
			sampler := startHeapSampler()
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make(chan string, calls)
				for range calls {
					wg.Go(func() {
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list", Arguments: map[string]any{"path": many}})
						switch {
						case err != nil:
							errs <- err.Error()
						case res.IsError || len(res.Content) == 0:
							errs <- fmt.Sprint(res.Content)
						default:
							if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, wantFooter) {
								errs <- "unexpected listing"
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for e := range errs {
					b.Fatal(e)
				}
			}
			b.ReportMetric(sampler.stop(), "peak-heap-MiB")
		})
	}
}

// heapSampler records the peak of live-and-unswept heap object bytes,
// sampled every millisecond until stopped.
type heapSampler struct {
	quit chan struct{}
	done sync.WaitGroup
	peak uint64
}

func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{quit: make(chan struct{}), peak: heapObjectBytes()}
	s.done.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-tick.C:
				s.peak = max(s.peak, heapObjectBytes())
			}
		}
	})
	return s
}

// stop ends the sampling and returns the peak in MiB.
func (s *heapSampler) stop() float64 {
	close(s.quit)
	s.done.Wait()
	s.peak = max(s.peak, heapObjectBytes())
	return float64(s.peak) / (1 << 20)
}

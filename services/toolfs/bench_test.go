//go:build linux

package toolfs_test

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

const (
	rdBenchLineBytes = 100 // 99 bytes of text and a newline
	rdBenchFileBytes = 1 << 30
)

// rdBenchLine is line n of the benchmark file, without its newline: the
// zero-padded number, a space, and filler up to 99 bytes.
func rdBenchLine(buf []byte, n int) []byte {
	buf = buf[:0]
	num := strconv.Itoa(n)
	for range 10 - len(num) {
		buf = append(buf, '0')
	}
	buf = append(buf, num...)
	buf = append(buf, ' ')
	for len(buf) < rdBenchLineBytes-1 {
		buf = append(buf, 'x')
	}
	return buf
}

// rdWriteBenchFile writes a ~1 GiB text file of 100-byte lines to path and
// returns its number of lines.
func rdWriteBenchFile(b *testing.B, path string) int {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	lines := rdBenchFileBytes / rdBenchLineBytes
	buf := make([]byte, 0, rdBenchLineBytes)
	for n := 1; n <= lines; n++ {
		buf = append(rdBenchLine(buf, n), '\n')
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return lines
}

// rdHeapSampler records the peak of live-and-unswept heap object bytes,
// sampled every millisecond until stopped.
type rdHeapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func rdHeapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func rdStartHeapSampler() *rdHeapSampler {
	s := &rdHeapSampler{stop: make(chan struct{}), peak: rdHeapObjectBytes()}
	s.done.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.peak = max(s.peak, rdHeapObjectBytes())
			}
		}
	})
	return s
}

// Stop ends the sampling and returns the peak in MiB.
func (s *rdHeapSampler) Stop() float64 {
	close(s.stop)
	s.done.Wait()
	s.peak = max(s.peak, rdHeapObjectBytes())
	return float64(s.peak) / (1 << 20)
}

// BenchmarkReadLastWindow1GiB reads the last 100-line window of a 1 GiB
// text file through the read tool on fslocal with the default config: the
// file is streamed and scanned whole (Z-9), and the heap must stay bounded
// whatever the file's size. It reports the peak heap in use during the calls.
func BenchmarkReadLastWindow1GiB(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 1 GiB file")
	}
	dir, err := os.MkdirTemp(os.TempDir(), "toolfs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	// b.Loop runs this function once per -count, so the file is written once.
	total := rdWriteBenchFile(b, filepath.Join(dir, "big.txt"))

	tools := rdTools(b, toolfs.Config{}, rdLocal(b, dir))
	read := tools.Read()
	args, err := json.Marshal(map[string]any{"file_path": "big.txt", "offset": total - 99, "limit": 100})
	if err != nil {
		b.Fatal(err)
	}
	call := tool.Call{ID: "bench", Arguments: args}
	wantLast := string(rdBenchLine(nil, total))
	wantFooter := "(End of file - total " + strconv.Itoa(total) + " lines)"
	ctx := context.Background()

	runtime.GC()
	base := float64(rdHeapObjectBytes()) / (1 << 20)
	sampler := rdStartHeapSampler()
	b.ReportAllocs()
	for b.Loop() {
		res := read.Handler(ctx, call)
		if res.IsError {
			b.Fatal(res.Text)
		}
		v, ok := res.Value.(toolfs.ReadValue)
		if !ok || v.TotalLines == nil || *v.TotalLines != total || len(v.Lines) != 100 || v.Lines[0].Number != total-99 ||
			v.Lines[99].Text != wantLast || !strings.Contains(res.Text, wantFooter) {
			b.Fatalf("unexpected result: %d lines: %s", len(v.Lines), res.Text[max(0, len(res.Text)-200):])
		}
	}
	peak := sampler.Stop()
	b.ReportMetric(peak, "peak-heap-MiB")
	b.ReportMetric(base, "base-heap-MiB")
}

// rdBenchManyEntries is the size of the directory of the list benchmarks
// (issue 14, item 11).
const rdBenchManyEntries = 1_000_000

// BenchmarkListLimit1Of1M lists `limit: 1` of a directory of 1,000,000
// entries through the list tool on fslocal: the names are read in batches
// and only the smallest is kept and stat'ed, so the heap stays bounded by the
// window, not the directory. It reports the peak heap in use during the
// calls. The directory is made under os.TempDir() and removed at the end.
func BenchmarkListLimit1Of1M(b *testing.B) {
	if testing.Short() {
		b.Skip("creates 1,000,000 files")
	}
	dir, err := os.MkdirTemp(os.TempDir(), "toolfs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	fixture.Many(b, filepath.Join(dir, "many"), rdBenchManyEntries)

	list := rdTools(b, toolfs.Config{}, rdLocal(b, dir)).List()
	call := tool.Call{ID: "bench", Arguments: json.RawMessage(`{"path":"many","limit":1}`)}
	wantFooter := "(Showing entries 1-1 of " + strconv.Itoa(rdBenchManyEntries) + ". Use offset=2 to continue.)"
	ctx := context.Background()

	runtime.GC()
	base := float64(rdHeapObjectBytes()) / (1 << 20)
	sampler := rdStartHeapSampler()
	b.ReportAllocs()
	for b.Loop() {
		res := list.Handler(ctx, call)
		if res.IsError {
			b.Fatal(res.Text)
		}
		v, ok := res.Value.(toolfs.ListValue)
		if !ok || v.TotalEntries != rdBenchManyEntries || len(v.Entries) != 1 || v.Entries[0].Name != "f0000000" ||
			!strings.Contains(res.Text, wantFooter) {
			b.Fatalf("unexpected result: %s", res.Text)
		}
	}
	peak := sampler.Stop()
	b.ReportMetric(peak, "peak-heap-MiB")
	b.ReportMetric(base, "base-heap-MiB")
}

// BenchmarkListTreeOf1M lists a tree of 1,000 directories of 1,000 empty
// files each through the list tool on fslocal: the first window of 1,000
// entries at depth 10 (the walk stops once the window is full), and the
// window at offset 500,001 (the walk reads half the tree's names but keeps
// only the window's smallest names of each directory and stats only the
// window). It reports the peak heap in use during the calls; the tree is
// made under os.TempDir() and removed at the end.
func BenchmarkListTreeOf1M(b *testing.B) {
	if testing.Short() {
		b.Skip("creates 1,000,000 files")
	}
	const dirs, perDir = 1000, 1000
	dir, err := os.MkdirTemp(os.TempDir(), "toolfs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	for d := range dirs {
		fixture.Many(b, filepath.Join(dir, "tree", fmt.Sprintf("d%03d", d)), perDir)
	}
	list := rdTools(b, toolfs.Config{}, rdLocal(b, dir)).List()
	for _, bc := range []struct {
		name, args, first, footer string
	}{
		{
			name: "depth10-first1000", args: `{"path":"tree","depth":10}`, first: "d000",
			footer: "(Showing entries 1-1000 of at least 2000. Use offset=1001 to continue.)",
		},
		{
			name: "depth2-offset500001", args: `{"path":"tree","depth":2,"offset":500001}`, first: "d499/f0000500",
			footer: "(Showing entries 500001-501000 of at least 502000. Use offset=501001 to continue.)",
		},
	} {
		b.Run(bc.name, func(b *testing.B) {
			call := tool.Call{ID: "bench", Arguments: json.RawMessage(bc.args)}
			ctx := context.Background()
			runtime.GC()
			sampler := rdStartHeapSampler()
			b.ReportAllocs()
			for b.Loop() {
				res := list.Handler(ctx, call)
				if res.IsError {
					b.Fatal(res.Text)
				}
				v, ok := res.Value.(toolfs.ListValue)
				if !ok || len(v.Entries) != 1000 || v.Entries[0].Path != bc.first || !strings.Contains(res.Text, bc.footer) {
					b.Fatalf("unexpected result: %.300s ... %s", res.Text, res.Text[max(0, len(res.Text)-200):])
				}
			}
			b.ReportMetric(sampler.Stop(), "peak-heap-MiB")
		})
	}
}

// BenchmarkReadLimit1Sparse20GiB reads `limit: 1` of a 20 GiB sparse file
// (20,000 short lines, then a hole) through the read tool on fslocal: the
// footer's total is counted within the budget (spec decision 17), so the
// call does not scan the file (issue 14, item 12). It reports the peak heap
// in use during the calls.
func BenchmarkReadLimit1Sparse20GiB(b *testing.B) {
	dir, err := os.MkdirTemp(os.TempDir(), "toolfs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	rdSparse(b, dir, "huge.txt", 20_000, 20<<30)
	read := rdTools(b, toolfs.Config{}, rdLocal(b, dir)).Read()
	call := tool.Call{ID: "bench", Arguments: json.RawMessage(`{"file_path":"huge.txt","limit":1}`)}
	ctx := context.Background()

	runtime.GC()
	sampler := rdStartHeapSampler()
	b.ReportAllocs()
	for b.Loop() {
		res := read.Handler(ctx, call)
		if res.IsError || !strings.Contains(res.Text, "1: line 1\n\n(Showing lines 1-1; more lines follow.") {
			b.Fatal(res.Text)
		}
	}
	b.ReportMetric(sampler.Stop(), "peak-heap-MiB")
}

// BenchmarkReadKernelFiles reads `limit: 1` of /proc/self/pagemap,
// /proc/kcore and /proc/kmsg through the read tool on fslocal, whatever size
// procfs reports (issue 14, item 9): each call returns its error at once
// and reads at most one chunk; /proc/kmsg is refused before any read. A file
// this process cannot open is skipped. It reports the peak heap in use
// during the calls.
func BenchmarkReadKernelFiles(b *testing.B) {
	read := rdTools(b, toolfs.Config{}, rdLocal(b, "/")).Read()
	ctx := context.Background()
	for _, p := range []string{"/proc/self/pagemap", "/proc/kcore", "/proc/kmsg"} {
		b.Run(filepath.Base(p), func(b *testing.B) {
			f, err := os.Open(p) //nolint:gosec // a fixed kernel file; opening reads nothing
			if err != nil {
				b.Skipf("%s: %v", p, err)
			}
			_ = f.Close()
			call := tool.Call{ID: "bench", Arguments: json.RawMessage(`{"file_path":"` + p + `","limit":1}`)}
			runtime.GC()
			sampler := rdStartHeapSampler()
			b.ReportAllocs()
			for b.Loop() {
				if res := read.Handler(ctx, call); !res.IsError {
					b.Fatalf("%s read: %s", p, res.Text)
				}
			}
			b.ReportMetric(sampler.Stop(), "peak-heap-MiB")
		})
	}
}

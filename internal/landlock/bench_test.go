//go:build linux

package landlock_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/landlock"
)

// BenchmarkRunOverhead interleaves, call by call, a function called directly
// and the same function run through Executor.Run on a thread restricted to
// one root, alternating which goes first, and reports the median of each and
// their difference. Two functions: a no-op (the hand-off alone: to a worker
// locked to its thread and back) and an openat for writing of an existing
// file beneath the root plus close (the hand-off plus Landlock's check of the
// open).
//
//	go test -run '^$' -bench RunOverhead -benchtime 20000x -count 3 ./internal/landlock/
func BenchmarkRunOverhead(b *testing.B) {
	root := dirs(b, "root")[0]
	require.NoError(b, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(b, err)
	b.Cleanup(func() { _ = unix.Close(rootFD) })
	ex := newExecutor(b, landlock.Config{})
	roots := []string{root}
	ctx := context.Background()

	fns := []struct {
		name string
		fn   func() error
	}{
		{"noop", func() error { return nil }},
		{"openat-close", func() error {
			fd, err := unix.Openat(rootFD, "f", unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		}},
	}
	for _, f := range fns {
		b.Run(f.name, func(b *testing.B) {
			calls := [2]func() error{
				f.fn,
				func() error { return ex.Run(ctx, roots, f.fn) },
			}
			var ns [2][]float64
			i := 0
			for b.Loop() {
				for k := range 2 {
					side := (i + k) % 2
					start := time.Now()
					if err := calls[side](); err != nil {
						b.Fatal(err)
					}
					ns[side] = append(ns[side], float64(time.Since(start)))
				}
				i++
			}
			direct, run := median(ns[0]), median(ns[1])
			b.ReportMetric(direct, "direct-ns")
			b.ReportMetric(run, "run-ns")
			b.ReportMetric(run-direct, "overhead-ns")
		})
	}
}

// median returns the middle value of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

//go:build linux

package fsbackend_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/journal"
)

// BenchmarkJournalOverwrite interleaves, call by call in alternating
// order, a 1 KiB overwrite through a backend with the journal on and one
// with it off, at both durability levels (the journal synced at full, not
// at atomic), on the same disk, and reports each median latency and their
// ratio "ratio" (on / off; issue 25's target: at most 1.3). Each write's
// content differs from the last, so the prior content the journal keeps
// is new every time (nothing deduplicated).
func BenchmarkJournalOverwrite(b *testing.B) {
	ctx := context.Background()
	for _, durability := range []fslocal.Durability{fslocal.DurabilityFull, fslocal.DurabilityAtomic} {
		b.Run(string(durability), func(b *testing.B) {
			j, err := journal.Open(journal.Options{
				Dir: benchDir(b), MaxBytes: journal.DefaultMaxBytes, Sync: durability == fslocal.DurabilityFull,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close() //nolint:errcheck // benchmark
			on, err := fslocal.New(fslocal.Config{Cwd: benchDir(b), Durability: durability, Journal: j}, nil)
			if err != nil {
				b.Fatal(err)
			}
			off, err := fslocal.New(fslocal.Config{Cwd: benchDir(b), Durability: durability}, nil)
			if err != nil {
				b.Fatal(err)
			}
			backends := [2]*fslocal.FileSystem{on, off}
			var targets [2]fs.Target
			for k, f := range backends {
				targets[k], _ = f.Resolve(ctx, "f", fs.ResolveOptions{})
				if _, err := f.WriteText(ctx, targets[k], kib, fs.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			var ns [2][]float64
			b.SetBytes(int64(len(kib)))
			b.ResetTimer()
			for i := range b.N {
				content := fmt.Sprintf("%015d\n", i) + kib[16:]
				for k := range 2 {
					j := (i + k) % 2
					start := time.Now()
					if _, err := backends[j].WriteText(ctx, targets[j], content, fs.WriteOptions{}); err != nil {
						b.Fatal(err)
					}
					ns[j] = append(ns[j], float64(time.Since(start)))
				}
			}
			mon, moff := median(ns[0]), median(ns[1])
			b.ReportMetric(mon, "on-ns")
			b.ReportMetric(moff, "off-ns")
			b.ReportMetric(mon/moff, "ratio")
		})
	}
}

//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// benchDir returns a directory on the disk the benchmarks measure: $HARNESS_BENCH_DIR
// when set (to measure another filesystem), else a fresh temp directory.
func benchDir(b *testing.B) string {
	if d := os.Getenv("HARNESS_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

var kib = strings.Repeat("0123456789abcde\n", 64) // 1 KiB

// BenchmarkWriteText measures durable 1 KiB writes: create (a new file each
// time) and overwrite (one file, unconditional).
func BenchmarkWriteText(b *testing.B) {
	ctx := context.Background()
	b.Run("create", func(b *testing.B) {
		dir := benchDir(b)
		f, _ := fslocal.New(fslocal.Config{Cwd: dir}, nil)
		targets := make([]fs.Target, b.N)
		for i := range targets {
			targets[i], _ = f.Resolve(ctx, "f"+strconv.Itoa(i), fs.ResolveOptions{})
		}
		b.SetBytes(int64(len(kib)))
		b.ResetTimer()
		for i := range b.N {
			if _, err := f.WriteText(ctx, targets[i], kib, fs.WriteOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("overwrite", func(b *testing.B) {
		dir := benchDir(b)
		f, _ := fslocal.New(fslocal.Config{Cwd: dir}, nil)
		tg, _ := f.Resolve(ctx, "f", fs.ResolveOptions{})
		if _, err := f.WriteText(ctx, tg, kib, fs.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(kib)))
		b.ResetTimer()
		for range b.N {
			if _, err := f.WriteText(ctx, tg, kib, fs.WriteOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteTextOverLarge measures a durable 1 KiB write over a 16 MiB
// CRLF text file, above the diff limit: the cost of streaming the prior file
// once to learn its conventions (spec difference 10).
func BenchmarkWriteTextOverLarge(b *testing.B) {
	ctx := context.Background()
	dir := benchDir(b)
	f, _ := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	tg, _ := f.Resolve(ctx, "f", fs.ResolveOptions{})
	large := strings.Repeat(strings.ReplaceAll(kib, "\n", "\r\n")[:1024], 16<<10)
	b.SetBytes(int64(len(large)))
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(large), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := f.WriteText(ctx, tg, kib, fs.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloor is the physical floor of a durable publication with plain
// os calls: exclusive temp file, write, fsync, rename, directory fsync.
func BenchmarkFloor(b *testing.B) {
	b.Run("create", func(b *testing.B) {
		dir := benchDir(b)
		b.SetBytes(int64(len(kib)))
		b.ResetTimer()
		for i := range b.N {
			floorWrite(b, dir, "f"+strconv.Itoa(i))
		}
	})
	b.Run("overwrite", func(b *testing.B) {
		dir := benchDir(b)
		b.SetBytes(int64(len(kib)))
		b.ResetTimer()
		for range b.N {
			floorWrite(b, dir, "f")
		}
	})
}

// BenchmarkWriteTextOverFloor interleaves, per iteration and in rotating
// order, one WriteText, one floor publication and one staged floor (the floor
// plus the spec's private staging directory: mkdir, temp inside it, rename
// out, rmdir), so all three meet the same disk weather, and reports each
// median latency and the ratios "ratio" (WriteText / floor) and
// "staged-ratio" (staged floor / floor) and "over-staged" (WriteText /
// staged floor: the price of everything but the staging directory). A shared virtual disk makes separate
// runs differ by several times; interleaving is what makes ratios meaningful.
func BenchmarkWriteTextOverFloor(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"create", "overwrite"} {
		b.Run(mode, func(b *testing.B) {
			ours, floor, staged := benchDir(b), benchDir(b), benchDir(b)
			f, _ := fslocal.New(fslocal.Config{Cwd: ours}, nil)
			var ns [3][]float64
			name := func(i int) string {
				if mode == "create" {
					return "f" + strconv.Itoa(i)
				}
				return "f"
			}
			b.ResetTimer()
			for i := range b.N {
				tg, _ := f.Resolve(ctx, name(i), fs.ResolveOptions{})
				runs := [3]func(){
					func() {
						if _, err := f.WriteText(ctx, tg, kib, fs.WriteOptions{}); err != nil {
							b.Fatal(err)
						}
					},
					func() { floorWrite(b, floor, name(i)) },
					func() { stagedFloorWrite(b, staged, name(i)) },
				}
				for k := range 3 {
					j := (i + k) % 3
					start := time.Now()
					runs[j]()
					ns[j] = append(ns[j], float64(time.Since(start)))
				}
			}
			mo, mf, ms := median(ns[0]), median(ns[1]), median(ns[2])
			b.ReportMetric(mo, "writetext-ns")
			b.ReportMetric(mf, "floor-ns")
			b.ReportMetric(ms, "staged-ns")
			b.ReportMetric(mo/mf, "ratio")
			b.ReportMetric(ms/mf, "staged-ratio")
			b.ReportMetric(mo/ms, "over-staged")
		})
	}
}

// stagedFloorWrite is floorWrite with the temp file inside a private staging
// directory beside the target, removed before the directory fsync.
func stagedFloorWrite(b *testing.B, dir, name string) {
	stage := filepath.Join(dir, "."+name+".tmpdir")
	if err := os.Mkdir(stage, 0o700); err != nil {
		b.Fatal(err)
	}
	tmp := filepath.Join(stage, name+".tmp")
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := file.WriteString(kib); err != nil {
		b.Fatal(err)
	}
	if err := file.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := file.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		b.Fatal(err)
	}
	if err := os.Remove(stage); err != nil {
		b.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.Fsync(int(d.Fd())); err != nil {
		b.Fatal(err)
	}
	_ = d.Close()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func floorWrite(b *testing.B, dir, name string) {
	tmp := filepath.Join(dir, "."+name+".tmp")
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := file.WriteString(kib); err != nil {
		b.Fatal(err)
	}
	if err := file.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := file.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		b.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.Fsync(int(d.Fd())); err != nil {
		b.Fatal(err)
	}
	_ = d.Close()
}

// BenchmarkEditText measures a one-line guarded edit of a 1 KiB file.
func BenchmarkEditText(b *testing.B) {
	ctx := context.Background()
	dir := benchDir(b)
	f, _ := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	tg, _ := f.Resolve(ctx, "f", fs.ResolveOptions{})
	out, err := f.WriteText(ctx, tg, "marker A\n"+kib, fs.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	v := out.Version
	words := [2]string{"marker A", "marker B"}
	b.ResetTimer()
	for i := range b.N {
		e, err := f.EditText(ctx, tg, fs.EditRequest{OldString: words[i%2], NewString: words[(i+1)%2], Version: v})
		if err != nil {
			b.Fatal(err)
		}
		v = e.Version
	}
}

// BenchmarkReadText measures reading a 1 KiB text file.
func BenchmarkReadText(b *testing.B) {
	ctx := context.Background()
	dir := benchDir(b)
	f, _ := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	tg, _ := f.Resolve(ctx, "f", fs.ResolveOptions{})
	if _, err := f.WriteText(ctx, tg, kib, fs.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(kib)))
	b.ResetTimer()
	for range b.N {
		if _, err := f.ReadText(ctx, tg); err != nil {
			b.Fatal(err)
		}
	}
}

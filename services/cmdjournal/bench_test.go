package cmdjournal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchFiles is the workspace size of BenchmarkCommandJournal.
const benchFiles = 10_000

// BenchmarkCommandJournal measures what --journal-commands adds to a
// command on a workspace of 10,000 files (100 directories of 100 files of
// 1 KiB, a .gitignore, an ignored node_modules): the first snapshot once
// (first-snapshot-ms: every file read into the journal), then, warm, a
// command that changes one file (`/bin/sh -c 'echo N > dNN/fNN'`) with the
// snapshot before it and the entry after it (on-ms), interleaved call by
// call with the same command on a sibling directory, unjournaled (off-ms);
// it reports the medians, their ratio and difference (added-ms), and the
// difference of the medians of this process's CPU time (added-cpu-ms: the
// walks' cost, less sensitive to other work on the machine than wall
// time). The journal is synced (durability full).
func BenchmarkCommandJournal(b *testing.B) {
	base, err := os.MkdirTemp("/var/tmp", "cmdjournal-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(base) })
	ws, off := filepath.Join(base, "ws"), filepath.Join(base, "off")
	kib := make([]byte, 1024)
	for i := range kib {
		kib[i] = byte('a' + i%26)
	}
	for _, root := range []string{ws, off} {
		for d := range benchFiles / 100 {
			dir := filepath.Join(root, fmt.Sprintf("d%02d", d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 100 {
				content := append([]byte(fmt.Sprintf("%d/%d\n", d, f)), kib...)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", f)), content, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := os.MkdirAll(filepath.Join(root, "node_modules", "m"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("node_modules/\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	j, err := New(Options{Journal: newStore(b), DenyRead: denyRead(b)})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := j.Begin("", []string{ws}); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	run := func(dir string, i int) {
		line := "echo " + strconv.Itoa(i) + " > d" + fmt.Sprintf("%02d", i%100) + "/f" + fmt.Sprintf("%02d", i%97)
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
	}
	var on, offNs, onCPU, offCPU []float64
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			c0 := cpuTime(b)
			t0 := time.Now()
			if (i+k)%2 == 0 {
				snap, err := j.Begin("", []string{ws})
				if err != nil {
					b.Fatal(err)
				}
				run(ws, i)
				res, err := snap.End(Call{Session: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Entry.Paths) != 1 {
					b.Fatalf("the entry lists %v, want the one file changed", res.Entry.Paths)
				}
				on = append(on, float64(time.Since(t0)))
				onCPU = append(onCPU, float64(cpuTime(b)-c0))
			} else {
				run(off, i)
				offNs = append(offNs, float64(time.Since(t0)))
				offCPU = append(offCPU, float64(cpuTime(b)-c0))
			}
		}
	}
	b.StopTimer()
	mOn, mOff := median(on), median(offNs)
	b.ReportMetric(float64(first)/1e6, "first-snapshot-ms")
	b.ReportMetric(mOn/1e6, "on-ms")
	b.ReportMetric(mOff/1e6, "off-ms")
	b.ReportMetric((mOn-mOff)/1e6, "added-ms")
	b.ReportMetric(mOn/mOff, "ratio")
	b.ReportMetric((median(onCPU)-median(offCPU))/1e6, "added-cpu-ms")
}

// cpuTime is the CPU time this process used so far (user and system, all
// its threads; not its children's, the commands'), which other work on the
// machine does not inflate as it does wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

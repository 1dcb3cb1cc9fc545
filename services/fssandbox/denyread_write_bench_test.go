//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// bigTempEntries is the size of BenchmarkWriteTempRoot's large temp root
// (issue 34: the machine's /tmp held 45,000 entries).
const bigTempEntries = 45_000

// BenchmarkWriteTempRoot is issue 34's write: a new 700-byte file in the
// workspace at DurabilityAtomic under workspace-write, with the deny-read
// defaults over a fixture home, and a temp root of a few entries ("small")
// or of 45,000 ("big": 450 directories of 99 files). "big-anchored-glob"
// adds `--deny-read <temp root>/**/*.pem`, an anchored pattern whose
// expansion would be a walk of the temp root; "big-churn" has another
// goroutine create and remove a file in one of the temp root's directories
// every millisecond (other processes writing in /tmp); "big-rename-loop" has
// one swap two files of one of its directories (renameat2 RENAME_EXCHANGE)
// as fast as it can, as a test suite or a build renaming in a loop does,
// each swap queueing four notifications. Each written
// file is removed outside the timer, so the workspace stays small. It
// reports ns/op, "writes/s" and "cpu-us/write" (the process's user and
// system time per write, which a busy machine inflates less than wall
// time).
func BenchmarkWriteTempRoot(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home := filepath.Join(base, "home")
	small := filepath.Join(base, "small")
	big := filepath.Join(base, "big")
	for _, d := range []string{filepath.Join(home, ".ssh"), small} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte(keyMarker), 0o600); err != nil {
		b.Fatal(err)
	}
	fillTree(b, big, bigTempEntries/100, 99)
	content := strings.Repeat("x", 699) + "\n"
	for _, tc := range []struct {
		name, temp string
		deny       []string
		churn      func(testing.TB, string, int) (stop func())
	}{
		{"small", small, nil, nil},
		{"big", big, nil, nil},
		{"big-anchored-glob", big, []string{big + "/**/*.pem"}, nil},
		{"big-rename-loop", big, nil, renameLoop},
		{"big-churn", big, nil, churn}, // last: the directories it touches are read again for 2 s after
	} {
		b.Run(tc.name, func(b *testing.B) {
			ws, err := os.MkdirTemp(base, "ws-"+tc.name+"-")
			if err != nil {
				b.Fatal(err)
			}
			policy, err := sandboxpolicy.New(sandboxpolicy.Config{
				Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{tc.temp},
				Homes: []string{home}, DenyRead: tc.deny,
			})
			if err != nil {
				b.Fatal(err)
			}
			f, err := fssandbox.New(policy, fslocal.Config{Cwd: ws, Durability: fslocal.DurabilityAtomic}, fssandbox.Config{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = f.Close() })
			ctx := context.Background()
			if tc.churn != nil {
				stop := tc.churn(b, big, bigTempEntries/100)
				defer stop()
			}
			var spent time.Duration
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				tg, err := f.Resolve(ctx, "n"+strconv.Itoa(i)+".txt", fs.ResolveOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.WriteText(ctx, tg, content, fs.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
				spent += time.Since(start)
				b.StopTimer()
				if err := os.Remove(string(tg.Key)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N)/spent.Seconds(), "writes/s")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/write")
		})
	}
}

// churn creates and removes a file in one of the directories d0..d<dirs-1>
// of root every millisecond until the returned stop is called.
func churn(tb testing.TB, root string, dirs int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			p := filepath.Join(root, "d"+strconv.Itoa(i%dirs), "churn")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				tb.Error(err)
				return
			}
			_ = os.Remove(p)
		}
	})
	return func() { close(done); wg.Wait() }
}

// renameLoop swaps root/d<dirs-1>/f0.txt and f1.txt with renameat2's
// RENAME_EXCHANGE, without pause (swapper), until the returned stop is
// called.
func renameLoop(tb testing.TB, root string, dirs int) (stop func()) {
	dir := filepath.Join(root, "d"+strconv.Itoa(dirs-1))
	a, b := filepath.Join(dir, "f0.txt"), filepath.Join(dir, "f1.txt")
	return swapper(func() {
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			tb.Error(err)
		}
	})
}

// cpuTime is the process's user and system time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillTree makes dirs directories under root, each holding files files.
func fillTree(tb testing.TB, root string, dirs, files int) {
	tb.Helper()
	for d := range dirs {
		dir := filepath.Join(root, "d"+strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		for i := range files {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)+".txt"), nil, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// BenchmarkGrepGoSource greps the Go distribution's source tree
// (`go env GOROOT`/src, some 12,000 files) for a pattern that matches nothing,
// through fssandbox (the deny-read defaults) and fslocal (no gate),
// interleaved; it reports the median of each and "ratio" = fssandbox /
// fslocal. Skipped when GOROOT/src is missing.
func BenchmarkGrepGoSource(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("no go command: ", err)
	}
	src, err := filepath.EvalSymlinks(filepath.Join(strings.TrimSpace(string(goroot)), "src"))
	if err != nil {
		b.Skip("no Go source tree: ", err)
	}
	ws := b.TempDir()
	policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: ws, TempRoots: []string{}})
	if err != nil {
		b.Fatal(err)
	}
	sb := newBenchSandbox(b, policy, ws)
	local, err := fslocal.New(fslocal.Config{Cwd: ws}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var ns [2][]float64
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			j := (i + k) % 2
			svc := [2]fs.Service{sb, local}[j]
			start := time.Now()
			tg, err := svc.Resolve(ctx, src, fs.ResolveOptions{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := svc.Grep(ctx, tg, fs.GrepOptions{Pattern: "zqxjv_nomatch_8841"})
			if err != nil || res.Searched < 1000 {
				b.Fatalf("grep: %v, %d files searched", err, res.Searched)
			}
			ns[j] = append(ns[j], float64(time.Since(start)))
		}
	}
	ms, ml := median(ns[0]), median(ns[1])
	b.ReportMetric(ms, "fssandbox-ns")
	b.ReportMetric(ml, "fslocal-ns")
	b.ReportMetric(ms/ml, "ratio")
}

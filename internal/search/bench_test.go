//go:build linux

package search_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/harness/internal/search"
)

// The fixture benchmarks run over the tree HARNESS_SEARCH_FIXTURE names (built
// by scripts/search-fixture.sh: copies of GOROOT and the module cache, at
// least 50,000 files); they are skipped without it. `make bench-search` builds
// the fixture and runs them.
func fixtureRoot(b *testing.B) string {
	root := os.Getenv("HARNESS_SEARCH_FIXTURE")
	if root == "" {
		b.Skip("HARNESS_SEARCH_FIXTURE is not set (make bench-search builds the fixture)")
	}
	return root
}

// benchPatterns are the searches of the comparison: a literal, a regular
// expression with a required literal (the usual shape of a code search), and
// one without any (Go's regexp scans every byte).
var benchPatterns = []struct {
	name    string
	pattern string
	literal bool
}{
	{"literal", "ErrUnexpectedEOF", true},
	{"regexp", `func \w+\(ctx context\.Context`, false},
	{"regexp-noliteral", `[A-Z]\w+_[A-Z]\w+_[A-Z]\w+`, false},
}

// BenchmarkGrepFixture is harness's grep alone over the fixture, every match
// in content mode (line numbers), as `rg -n` reports them.
func BenchmarkGrepFixture(b *testing.B) {
	root := fixtureRoot(b)
	for _, p := range benchPatterns {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				res, err := search.Grep(context.Background(), root, search.GrepOptions{
					Pattern: p.pattern, Literal: p.literal, Mode: search.ModeContent, Limit: 1 << 30,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.Searched), "files")
			}
		})
	}
}

// BenchmarkGlobFixture is `**/*.go` over the fixture.
func BenchmarkGlobFixture(b *testing.B) {
	root := fixtureRoot(b)
	for b.Loop() {
		res, err := search.Glob(context.Background(), root, search.GlobOptions{Pattern: "**/*.go", Limit: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(res.Files)), "matches")
	}
}

// BenchmarkCompareFixture runs harness's grep, `rg -n --no-require-git` and
// `grep -rn` on the fixture, interleaved call by call (the order rotates), and
// reports each one's wall and CPU time per search and harness's ratios to
// rg. harness and rg must report the same number of matching lines. With
// HARNESS_SEARCH_COLD=1 the page cache is dropped before every search (root
// only).
func BenchmarkCompareFixture(b *testing.B) {
	root := fixtureRoot(b)
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("rg is not installed (apt-get install ripgrep)")
	}
	cold := os.Getenv("HARNESS_SEARCH_COLD") == "1"
	for _, p := range benchPatterns {
		b.Run(p.name, func(b *testing.B) {
			type tool struct {
				name       string
				run        func() (int, error)
				wall, cpu  time.Duration
				matchLines int
			}
			rgArgs := []string{"-n", "--no-require-git"}
			grepArgs := []string{"-rn"}
			if p.literal {
				rgArgs = append(rgArgs, "-F")
				grepArgs = append(grepArgs, "-F")
			} else {
				grepArgs = append(grepArgs, "-P") // \w; -E has no \w in POSIX
			}
			tools := []*tool{
				{name: "harness", run: func() (int, error) {
					res, err := search.Grep(context.Background(), root, search.GrepOptions{
						Pattern: p.pattern, Literal: p.literal, Mode: search.ModeContent, Limit: 1 << 30,
					})
					n := 0
					for _, f := range res.Files {
						n += f.Count
					}
					return n, err
				}},
				{name: "rg", run: command(root, rg, append(rgArgs, "--", p.pattern, ".")...)},
				{name: "grep", run: command(root, "grep", append(grepArgs, "--", p.pattern, ".")...)},
			}
			i := 0
			for b.Loop() {
				for k := range tools {
					t := tools[(i+k)%len(tools)]
					if cold {
						dropCaches(b)
					}
					cpu0 := cpuTime()
					start := time.Now()
					n, err := t.run()
					t.wall += time.Since(start)
					t.cpu += cpuTime() - cpu0
					if err != nil {
						b.Fatalf("%s: %v", t.name, err)
					}
					t.matchLines = n
				}
				i++
			}
			if tools[0].matchLines != tools[1].matchLines {
				b.Fatalf("harness found %d matching lines, rg %d", tools[0].matchLines, tools[1].matchLines)
			}
			runs := float64(i)
			for _, t := range tools {
				b.ReportMetric(t.wall.Seconds()*1000/runs, t.name+"-ms")
				b.ReportMetric(t.cpu.Seconds()*1000/runs, t.name+"-cpu-ms")
			}
			b.ReportMetric(tools[0].wall.Seconds()/tools[1].wall.Seconds(), "x-rg-wall")
			b.ReportMetric(tools[0].cpu.Seconds()/tools[1].cpu.Seconds(), "x-rg-cpu")
			b.ReportMetric(tools[0].wall.Seconds()/tools[2].wall.Seconds(), "x-grep-wall")
			b.ReportMetric(float64(tools[0].matchLines), "lines")
		})
	}
}

// command returns a runner of name with args in dir that counts its output
// lines; exit status 1 (no match) is not an error.
func command(dir, name string, args ...string) func() (int, error) {
	return func() (int, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() <= 2 {
			err = nil // 1: no match; 2 (grep): an unreadable entry
		}
		return bytes.Count(out.Bytes(), []byte{'\n'}), err
	}
}

// cpuTime is the user and system time of this process and its waited-for
// children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	d := func(tv syscall.Timeval) time.Duration { return time.Duration(tv.Nano()) }
	return d(self.Utime) + d(self.Stime) + d(kids.Utime) + d(kids.Stime)
}

// dropCaches empties the page cache, dentries and inodes.
func dropCaches(b *testing.B) {
	b.Helper()
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o644); err != nil {
		b.Fatalf("cold cache needs root: %v", err)
	}
}

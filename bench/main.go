// Command bench compares `harness serve` with the reference MCP filesystem
// server (@modelcontextprotocol/server-filesystem, pinned in
// reference/package-lock.json) over stdio, with the same Go MCP client and
// the same workloads, and writes the figures into docs/benchmarks.md (between
// the markers <!-- bench:begin --> and <!-- bench:end -->) and a chart.
//
// Usage (from this directory; `make bench` in the module root runs it):
//
//	go run . -out ../docs/benchmarks.md -chart ../docs/bench-calls.svg
//
// It installs the reference server with npm into a scratch directory under
// os.TempDir() (reused when present), gives each server a fresh directory
// per run under os.TempDir() (the same disk for both), and runs every
// workload at concurrency 1 and 8, alternating which server goes first,
// several runs each. It reports the median calls/s of the runs and the
// ratio ours over reference. Progress goes to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	out       string        // markdown file whose marked section is rewritten
	chart     string        // chart file (.svg or .png)
	harness   string        // the harness binary
	scratch   string        // npm scratch directory of the reference server
	runs      int           // runs of each measurement per server
	duration  time.Duration // timed part of a read/overwrite/edit measurement
	warmup    time.Duration // untimed calls before each such measurement
	creates   int           // files created by a creation measurement
	prefill   int           // entries already in the directory of the "full" creation
	fileSize  int           // bytes of the read, overwrite and edit files
	keep      bool          // keep the work directories
	noInstall bool          // fail instead of running npm
}

func main() {
	var cfg config
	flag.StringVar(&cfg.out, "out", "", "markdown file to update between <!-- bench:begin --> and <!-- bench:end --> (empty: print the section to stdout)")
	flag.StringVar(&cfg.chart, "chart", "", "chart file to write, .svg or .png (empty: no chart)")
	flag.StringVar(&cfg.harness, "harness", "../bin/harness", "harness binary")
	flag.StringVar(&cfg.scratch, "scratch", filepath.Join(os.TempDir(), "harness-bench-reference-"+referenceVersion), "npm scratch directory of the reference server (reused when it holds the pinned install)")
	flag.IntVar(&cfg.runs, "runs", 5, "runs of each measurement per server")
	flag.DurationVar(&cfg.duration, "duration", 1500*time.Millisecond, "timed part of each read, overwrite and edit measurement")
	flag.DurationVar(&cfg.warmup, "warmup", 300*time.Millisecond, "untimed calls before each read, overwrite and edit measurement")
	flag.IntVar(&cfg.creates, "creates", 3000, "new files created per creation measurement")
	flag.IntVar(&cfg.prefill, "prefill", 10000, "entries already in the directory of the second creation measurement")
	flag.IntVar(&cfg.fileSize, "size", 1024, "bytes of the read, overwrite and edit target files")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directories under os.TempDir()")
	flag.BoolVar(&cfg.noInstall, "no-install", false, "do not run npm: the scratch directory must already hold the reference server")
	flag.Parse()
	if flag.NArg() > 0 || cfg.runs < 1 || cfg.creates < 8 || cfg.prefill < 0 || cfg.fileSize < 256 {
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	began := time.Now()
	harnessBin, err := filepath.Abs(cfg.harness)
	if err != nil {
		return err
	}
	if _, err := os.Stat(harnessBin); err != nil {
		return fmt.Errorf("harness binary: %w (build it: go build -o bin/harness ./cmd/harness)", err)
	}
	refMain, err := installReference(ctx, cfg.scratch, cfg.noInstall)
	if err != nil {
		return fmt.Errorf("installing the reference server: %w", err)
	}
	machine, err := describeMachine(ctx, harnessBin)
	if err != nil {
		return err
	}
	progress("machine: %s", machine.line())

	root, err := os.MkdirTemp("", "harness-bench-")
	if err != nil {
		return err
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return err
	}
	if !cfg.keep {
		defer func() { _ = os.RemoveAll(root) }()
	} else {
		progress("work directories kept under %s", root)
	}

	servers := []serverSpec{
		harnessSpec(harnessBin),
		referenceSpec(refMain),
	}
	res, err := measureAll(ctx, cfg, root, servers)
	if err != nil {
		return err
	}
	res.machine = machine
	res.cfg = cfg

	section := renderSection(res)
	if cfg.out == "" {
		fmt.Print(section)
	} else if err := updateMarked(cfg.out, section); err != nil {
		return err
	} else {
		progress("wrote the section into %s", cfg.out)
	}
	if cfg.chart != "" {
		if err := drawChart(res, cfg.chart); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		progress("wrote %s", cfg.chart)
	}
	printSummary(res)
	progress("done in %s", time.Since(began).Round(time.Second))
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

// progress prints one line to stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Command bench compares `harness serve`, at both durability levels
// (--durability full and atomic, two series taking turns like the other
// servers), with the reference MCP filesystem server
// (@modelcontextprotocol/server-filesystem, pinned with its dependencies in
// reference/package-lock.json) over stdio, with the same Go MCP client (the
// official go-sdk) and the same workloads, and writes the
// figures into docs/benchmarks.md (between the markers <!-- bench:begin -->
// and <!-- bench:end -->, leaving the rest of the file alone) and a chart.
//
// Usage (from this directory; `make bench` in the module root runs it):
//
//	go run . -harness ../bin/harness -out ../docs/benchmarks.md -chart ../docs/bench-calls.svg
//
// It installs the reference server with npm into a scratch directory under
// os.TempDir() (reused when it holds the pinned install), gives each server a
// fresh directory per run under os.TempDir() (the same disk for all), and
// measures read, overwrite, one-line edit and file creation (into an empty
// directory and into one holding 10,000 files) at concurrency 1 and 8, the
// servers taking turns slice by slice, several runs each; it reports medians
// of calls/s, the ratio harness over reference, and the CPU time per call of
// server and client. Before the runs it measures each server's cold start
// (spawn to the answer of tools/list, median of -cold-starts spawns) and
// idle resident set; each run records each server's peak resident set
// (startup.go). With -floor (the default) it also measures a floor
// server (floor.go: no SDK, one os call per tool call) and a durable floor
// (plain os calls, no MCP), which bound what any server could reach on the
// machine. Progress goes to stderr.
//
// For analysis: -only and -servers measure a subset (printed, not written);
// -profile DIR records CPU and allocation profiles of harness serve, built
// with a hook added by `go build -overlay` (no file of the main module
// changes); -wrap-harness and -wrap-reference run a server under a command
// such as perf or strace; -protocol and -harness-env vary the protocol
// version and harness's environment (GOGC, ...).
//
// Before the runs it measures the exec round trip of issues 22 and 34
// (execrt.go, execfix.go, execreport.go) in five scenarios, each with a
// fresh harness serve --mode workspace-write (default isolation,
// bubblewrap): an empty workspace, one of 100,000 files, one of a million
// entries (-exec-big=false leaves it out), and an empty workspace whose
// --temp-root holds 50,000 entries that a goroutine churns with
// repository-shaped directories, with each session's private temp area and
// with --shared-temp. In each it times the session's first exec, then
// takes turns sample by sample between the MCP call of exec with
// {"command":"true"}, a bare bwrap replaying the arguments harness's own
// bwrap got (recorded by a second server's recording bwrap) with /bin/true
// as the command, and /bin/sh -c true; it reports wall times and CPU per
// call (the server and its waited-for children; each bare run's own
// rusage) and checks issue 34's targets (empty workspace: wall at most 1.5x
// and CPU at most 2x bare bwrap's; other scenarios: at most 1.2x the empty
// workspace's; first call at most 2x the median) and issue 22's. The
// fixtures live under -exec-dir and are removed at the end. -only exec
// measures that alone (two to three minutes on 2 cores, most of it making
// and removing the million entries) and, with -out, rewrites only its part
// of the section (between <!-- bench-exec:begin --> and
// <!-- bench-exec:end -->); `make bench-exec` runs it so.
//
// -only http measures read over Streamable HTTP against stdio (issue 26,
// httpvs.go): the same harness binary on the same directory and file, over
// `serve --listen` with a bearer token and over stdio, at concurrency 1 and
// 8, taking turns slice by slice, checked against HTTP at least 0.7x
// stdio; with -out it rewrites only its section (between
// <!-- bench-http:begin --> and <!-- bench-http:end -->); `make bench-http`
// runs it so, and `make bench` after the rest.
//
// With -glob DIR it measures only the glob workload of issue 16 (glob.go):
// harness's glob of **/*.go over DIR against the reference's search_files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	out        string        // markdown file whose marked section is rewritten
	chart      string        // chart file (.svg or .png)
	harness    string        // the harness binary
	scratch    string        // npm scratch directory of the reference server
	runs       int           // runs of each measurement per server
	duration   time.Duration // timed part of a read/overwrite/edit measurement
	warmup     time.Duration // untimed calls before each such measurement
	creates    int           // files created by a creation measurement
	createRuns int           // runs that measure creation (the first ones)
	slices     int           // slices of a timed measurement, servers taking turns
	chunk      int           // files per chunk of a creation measurement, directories taking turns
	prefill    int           // entries already in the directory of the "full" creation
	fileSize   int           // bytes of the read, overwrite and edit files
	keep       bool          // keep the work directories
	noInstall  bool          // fail instead of running npm
	only       string        // comma-separated workloads to measure (empty: all)
	wrap       string        // command prefix for harness serve, e.g. perf record (profiling)
	wrapRef    string        // command prefix for the reference server
	servers    string        // comma-separated servers to run (empty: all)
	profile    string        // directory for CPU and allocation profiles of harness serve
	module     string        // root of the harness module (for -profile)
	protocol   string        // MCP protocol version the client asks for (empty: the SDK's latest)
	harnessEnv string        // comma-separated KEY=VALUE added to harness serve's environment
	floor      bool          // also measure the floor server
	coldStarts int           // spawns per server measuring the cold start
	// The exec round trip (execrt.go).
	execSamples int    // timed samples of each contender
	execWarmups int    // untimed rounds before them
	execDir     string // parent of the throwaway workspaces (outside /tmp)
	execBig     bool   // also the million-entry workspace
	// execChurnPause is the churn's pause between cycles in the temp-root
	// scenarios.
	execChurnPause time.Duration
}

func main() {
	if recordingBwrap() {
		os.Exit(recordBwrap())
	}
	var cfg config
	flag.StringVar(&cfg.out, "out", "", "markdown file to update between <!-- bench:begin --> and <!-- bench:end --> (empty: print the section to stdout)")
	flag.StringVar(&cfg.chart, "chart", "", "chart file to write, .svg or .png (empty: no chart)")
	flag.StringVar(&cfg.harness, "harness", "../bin/harness", "harness binary")
	flag.StringVar(&cfg.scratch, "scratch", filepath.Join(os.TempDir(), "harness-bench-reference-"+referenceVersion), "npm scratch directory of the reference server (reused when it holds the pinned install)")
	flag.IntVar(&cfg.runs, "runs", 5, "runs of each measurement per server")
	flag.DurationVar(&cfg.duration, "duration", 1500*time.Millisecond, "timed part of each read, overwrite and edit measurement")
	flag.DurationVar(&cfg.warmup, "warmup", 300*time.Millisecond, "untimed calls before each read, overwrite and edit measurement")
	flag.IntVar(&cfg.creates, "creates", 3000, "new files created per creation measurement")
	flag.IntVar(&cfg.createRuns, "create-runs", 3, "runs that also measure creation (the slowest workload: the reference scans the whole directory on each new file)")
	flag.IntVar(&cfg.slices, "slices", 4, "slices of each read, overwrite and edit measurement; the servers take turns slice by slice")
	flag.IntVar(&cfg.chunk, "chunk", 250, "files per chunk of a creation measurement; the directories take turns chunk by chunk")
	flag.IntVar(&cfg.prefill, "prefill", 10000, "entries already in the directory of the second creation measurement")
	flag.IntVar(&cfg.fileSize, "size", 1024, "bytes of the read, overwrite and edit target files")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directories under os.TempDir()")
	flag.BoolVar(&cfg.noInstall, "no-install", false, "do not run npm: the scratch directory must already hold the reference server")
	flag.StringVar(&cfg.only, "only", "", "comma-separated workloads to measure: read, overwrite, edit, create-empty, create-full, exec; or http alone (empty: all but http; the markdown and chart need all, except -only exec alone, which rewrites only the exec round trip's part of -out, and -only http, which measures read over HTTP against stdio and rewrites only its section of -out)")
	flag.IntVar(&cfg.execSamples, "exec-samples", 60, "timed samples of each exec round-trip contender (A: exec over MCP, B: bare bwrap, C: sh -c true) per scenario, taking turns")
	flag.IntVar(&cfg.execWarmups, "exec-warmups", 5, "untimed rounds of A, B and C before each scenario's exec round-trip samples")
	flag.StringVar(&cfg.execDir, "exec-dir", "/var/tmp", "directory holding the exec round trip's throwaway workspaces and temp root (outside the temp roots harness makes writable, /tmp and $TMPDIR)")
	flag.BoolVar(&cfg.execBig, "exec-big", true, "also measure the exec round trip in a workspace of a million entries (making it takes a minute or more on 2 cores; false for quick runs)")
	flag.DurationVar(&cfg.execChurnPause, "exec-churn-pause", time.Millisecond, "pause between cycles of the churn of the temp root in the exec round trip's temp-root scenarios")
	flag.StringVar(&cfg.servers, "servers", "", "comma-separated servers to run: harness (--durability full), harness-atomic (--durability atomic), reference (empty: all three; the markdown and chart need all)")
	flag.IntVar(&cfg.coldStarts, "cold-starts", 10, "spawns of each server timing its cold start (spawn to the answer of tools/list) and idle memory, before the runs (0: none)")
	flag.StringVar(&cfg.profile, "profile", "", "directory: build cmd/harness with a CPU-profile hook (go build -overlay) and write each run's CPU and allocation profiles of harness serve there")
	flag.StringVar(&cfg.module, "module", "..", "root of the harness module (for -profile)")
	flag.StringVar(&cfg.protocol, "protocol", "", "MCP protocol version the client asks for (empty: the go-sdk's latest; each server may negotiate down)")
	flag.StringVar(&cfg.harnessEnv, "harness-env", "", "comma-separated KEY=VALUE pairs added to harness serve's environment (experiments, e.g. GOGC=400)")
	flag.BoolVar(&cfg.floor, "floor", true, "also measure the floor server: a minimal JSON-RPC loop without an SDK doing one os call per tool call (a ceiling for this client and machine)")
	globDir := flag.String("glob", "", "directory: instead of the workloads, time harness's glob of **/*.go over it against the reference's search_files and print a table (issue 16)")
	globRuns := flag.Int("glob-runs", 3, "timed calls of each glob contender (with -glob)")
	serveFloorFlag := flag.Bool("serve-floor", false, "run as the floor server on stdin/stdout (used by -floor)")
	flag.StringVar(&cfg.wrapRef, "wrap-reference", "", "space-separated command that runs the reference server (like -wrap-harness)")
	flag.StringVar(&cfg.wrap, "wrap-harness", "", "space-separated command that runs harness serve, e.g. \"perf record -g -o /tmp/perf.data --\" (profiling)")
	flag.Parse()
	if *serveFloorFlag {
		if err := serveFloor(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() > 0 || cfg.execSamples < 1 || cfg.execWarmups < 0 || cfg.execChurnPause < 0 || cfg.coldStarts < 0 || cfg.runs < 1 || cfg.creates < 8 || cfg.createRuns < 1 || cfg.slices < 1 || cfg.chunk < 1 || cfg.prefill < 0 || cfg.fileSize < 256 {
		flag.Usage()
		os.Exit(2)
	}

	if *globDir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := runGlob(ctx, cfg, *globDir, max(*globRuns, 1))
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}

	cfg.createRuns = min(cfg.createRuns, cfg.runs)
	if cfg.only == onlyExec || cfg.only == onlyHTTP {
		if cfg.chart != "" || cfg.servers != "" {
			fmt.Fprintf(os.Stderr, "bench: -only %s measures alone: it cannot be combined with -chart or -servers\n", cfg.only)
			os.Exit(2)
		}
	} else if (cfg.only != "" || cfg.servers != "") && (cfg.out != "" || cfg.chart != "") {
		fmt.Fprintln(os.Stderr, "bench: -only and -servers measure a subset: they cannot be combined with -out or -chart (except -only exec alone)")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	switch cfg.only {
	case onlyExec:
		err = runExecOnly(ctx, cfg)
	case onlyHTTP:
		err = runHTTPOnly(ctx, cfg)
	default:
		err = run(ctx, cfg)
	}
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
		return fmt.Errorf("harness binary: %w (build it: make build)", err)
	}
	if cfg.profile != "" {
		if cfg.profile, err = filepath.Abs(cfg.profile); err != nil {
			return err
		}
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return err
		}
		module, err := filepath.Abs(cfg.module)
		if err != nil {
			return err
		}
		if harnessBin, err = buildProfiled(ctx, module, cfg.profile); err != nil {
			return err
		}
		progress("profiling harness serve: built %s; profiles go to %s", harnessBin, cfg.profile)
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

	// The exec round trip first, before the work directories fill the temp
	// dir, which harness's protected-path search walks on every command.
	// Its fixtures (up to a million entries) are removed at the end, just
	// before the work directories: removing them now would slow every new
	// file of the workloads for half a minute on ext4 without a journal.
	var execRes *execStats
	removeExec := func() {}
	if cfg.only == "" || slices.Contains(strings.Split(cfg.only, ","), onlyExec) {
		if execRes, removeExec, err = measureExec(ctx, cfg, harnessBin); err != nil {
			removeExec()
			if ctx.Err() != nil {
				return err
			}
			progress("exec round trip: %v", err)
			execRes, removeExec = &execStats{err: err}, func() {}
		} else {
			printExec(execRes)
		}
	}

	root, err := os.MkdirTemp("", "harness-bench-")
	if err != nil {
		removeExec()
		return err
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		removeExec()
		return err
	}
	if !cfg.keep {
		defer func() {
			removeExec()
			removeWork(root)
		}()
	} else {
		defer removeExec()
		progress("work directories kept under %s", root)
	}

	var servers []serverSpec
	all := []serverSpec{
		harnessSpec(harnessBin, strings.Fields(cfg.wrap), durabilityFull),
		harnessSpec(harnessBin, strings.Fields(cfg.wrap), durabilityAtomic),
		referenceSpec(refMain, strings.Fields(cfg.wrapRef)),
	}
	for _, s := range all {
		if cfg.servers == "" || slices.Contains(strings.Split(cfg.servers, ","), s.key) {
			servers = append(servers, s)
		}
	}
	if cfg.floor {
		fl, err := floorSpec()
		if err != nil {
			return err
		}
		servers = append(servers, fl)
	}
	if len(servers) == 0 {
		return fmt.Errorf("-servers %q selects no server", cfg.servers)
	}
	res, err := measureAll(ctx, cfg, root, servers)
	if err != nil {
		return err
	}
	res.machine = machine
	res.cfg = cfg
	res.exec = execRes

	if cfg.only != "" || cfg.servers != "" {
		printSummary(res)
		return nil
	}
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

// onlyExec is the -only value that measures the exec round trip alone.
const onlyExec = "exec"

// runExecOnly measures the exec round trip alone, prints it and, with -out,
// rewrites only its part of the generated section.
func runExecOnly(ctx context.Context, cfg config) error {
	harnessBin, err := filepath.Abs(cfg.harness)
	if err != nil {
		return err
	}
	if _, err := os.Stat(harnessBin); err != nil {
		return fmt.Errorf("harness binary: %w (build it: make build)", err)
	}
	st, removeExec, err := measureExec(ctx, cfg, harnessBin)
	defer removeExec()
	if err != nil {
		return err
	}
	printExec(st)
	if cfg.out == "" {
		fmt.Print(renderExec(st))
		return nil
	}
	if err := updateExecMarked(cfg.out, renderExec(st)); err != nil {
		return err
	}
	progress("wrote the exec round trip into %s", cfg.out)
	return nil
}

// removeWork removes the work directories, only at the end: on ext4
// without a journal, each new inode costs a scan past the inodes freed in the
// last 30-35 s in its block group (ext4's recently_deleted check), so
// removing tens of thousands of files between measurements would slow every
// create, overwrite and edit after it, by up to 0.9 ms of CPU each here. For
// the same reason, on such a filesystem it waits the window out afterwards,
// so that what runs next (make bench's in-process benchmarks) does not pay.
func removeWork(root string) {
	progress("removing the work directories")
	_ = os.RemoveAll(root)
	if journal, ok := ext4Journal(root); ok && !journal {
		progress("waiting %s: ext4 without a journal, the removed inodes slow new files for that long", recentlyDeleted)
		time.Sleep(recentlyDeleted)
	}
}

// progress prints one line to stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The exec round trip (issue 22): how long `exec` of `true` takes over MCP
// against harness serve in workspace-write mode (bubblewrap isolation), next
// to what the same sandbox costs without harness (bare bwrap with the same
// namespaces and binds running /bin/true) and to a plain `/bin/sh -c true`.
// The three take turns sample by sample (A, B, C, A, B, C, ...), so load
// and frequency drift hit all three alike.

// Targets of issue 22.
const (
	execTargetMedianMs = 12.0 // A's median at most this
	execTargetRatio    = 2.5  // A's median over B's at most this
)

// Markers of the exec round trip's part of the generated section, which
// `-only exec -out FILE` rewrites alone.
const (
	execBeginMarker = "<!-- bench-exec:begin -->"
	execEndMarker   = "<!-- bench-exec:end -->"
)

// Keys of the three contenders.
const (
	execA = "A"
	execB = "B"
	execC = "C"
)

// execStats are the samples of one exec round-trip measurement.
type execStats struct {
	ms        map[string][]float64 // wall times in ms by contender key, in sample order
	cpu       map[string]float64   // CPU per sample in ms by contender key (-1: unknown)
	warmups   int
	samples   int
	bwrap     string // bwrap's path and version
	workspace string // parent directory of the throwaway workspaces
	roots     []string
	tempDirs  int // directories of this user in the temp roots, at the start
	loadStart string
	loadEnd   string
	date      string
	took      time.Duration
	err       error    // the measurement failed (rendered instead of figures)
	failures  []string // A's calls that returned an error result, tried again
}

// execFailure is an exec call that returned an error result.
type execFailure struct{ msg string }

func (e *execFailure) Error() string { return "exec over MCP: " + e.msg }

// maxExecFailures is how many error results of A the measurement tolerates
// (each tried again) before it fails.
func maxExecFailures(samples int) int { return max(5, samples/10) }

// execCommand is A's call.
var execCommand = &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "true"}}

// measureExec measures the exec round trip: cfg.execWarmups untimed rounds,
// then cfg.execSamples timed ones, each round A, B, C in that order.
func measureExec(ctx context.Context, cfg config, harnessBin string) (*execStats, error) {
	began := time.Now()
	st := &execStats{
		ms:        map[string][]float64{},
		cpu:       map[string]float64{execA: -1, execB: -1, execC: -1},
		warmups:   cfg.execWarmups,
		samples:   cfg.execSamples,
		loadStart: loadAverage(),
		date:      time.Now().Format("2006-01-02 15:04"),
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("exec round trip: %w (apt-get install bubblewrap)", err)
	}
	if bwrap, err = filepath.EvalSymlinks(bwrap); err != nil {
		return nil, err
	}
	out, _ := exec.CommandContext(ctx, bwrap, "--version").Output()
	st.bwrap = strings.TrimSpace(bwrap + " (" + strings.TrimSpace(string(out)) + ")")

	parent, err := filepath.Abs(cfg.execDir)
	if err != nil {
		return nil, err
	}
	if parent, err = filepath.EvalSymlinks(parent); err != nil {
		return nil, fmt.Errorf("exec round trip: -exec-dir: %w", err)
	}
	st.workspace = parent
	dir, err := os.MkdirTemp(parent, "harness-bench-exec-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	// Two empty workspaces of the same shape: the bare bwrap's reserved
	// .git mount point must not show up in harness's workspace (it would
	// then be a protected path, bound read-only, instead of a reserved one).
	wsA, wsB := filepath.Join(dir, "serve"), filepath.Join(dir, "bwrap")
	for _, d := range []string{wsA, wsB} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	st.roots = tempRoots()
	for _, r := range st.roots {
		st.tempDirs += ownedDirs(r, os.Geteuid(), 1_000_000)
	}

	spec := serverSpec{
		key:   "harness-exec",
		label: "harness serve (exec)",
		command: func(dir string) *exec.Cmd {
			cmd := exec.Command(harnessBin, "serve", "--workspace", dir, "--mode", "workspace-write", "--log-level", "warn")
			cmd.Env = withoutHarnessEnv(os.Environ())
			return cmd
		},
		tools: []string{"exec"},
	}
	s, err := startServer(ctx, spec, wsA, cfg.protocol, true)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := s.close(); err != nil {
			progress("closing %s: %v", spec.key, err)
		}
	}()
	progress("exec round trip: harness serve (pid %d) on %s; bare %s; %d warm-up rounds, then %d rounds of A, B, C",
		s.pid, wsA, st.bwrap, cfg.execWarmups, cfg.execSamples)

	bArgs := bareBwrapArgs(wsB, st.roots)
	runA := func() (time.Duration, error) {
		t0 := time.Now()
		res, err := s.sess.CallTool(ctx, execCommand)
		d := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("exec over MCP: %w\nserver stderr:\n%s", err, s.stderr)
		}
		if res.IsError || !strings.HasPrefix(resultText(res), "exit code 0") {
			return 0, &execFailure{msg: strings.TrimSpace(resultText(res)) + metaCode(res)}
		}
		return d, nil
	}
	runB := func() (time.Duration, error) {
		d, err := timeProcess(bwrap, bArgs)
		// What bwrap made for the reserved .git, removed as harness does
		// after a command (release), outside the timed part.
		_ = syscall.Rmdir(filepath.Join(wsB, ".git"))
		return d, err
	}
	runC := func() (time.Duration, error) { return timeProcess("/bin/sh", []string{"-c", "true"}) }
	contenders := []struct {
		key string
		run func() (time.Duration, error)
	}{{execA, runA}, {execB, runB}, {execC, runC}}

	var serverCPU0, childCPU0 time.Duration
	for i := -cfg.execWarmups; i < cfg.execSamples; i++ {
		if i == 0 {
			serverCPU0, childCPU0 = treeCPU(s.pid), childrenCPU()
		}
		for _, c := range contenders {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			d, err := c.run()
			var failed *execFailure
			for errors.As(err, &failed) && len(st.failures) < maxExecFailures(cfg.execSamples) {
				// A call the runner refused (a race of its own, or what
				// another user put in /tmp): counted, shown, tried again.
				st.failures = append(st.failures, failed.msg)
				progress("exec round trip: A failed (%d so far), trying again: %s", len(st.failures), failed.msg)
				d, err = c.run()
			}
			if err != nil {
				return nil, fmt.Errorf("exec round trip, %s: %w", c.key, err)
			}
			if i >= 0 {
				st.ms[c.key] = append(st.ms[c.key], float64(d.Nanoseconds())/1e6)
			}
		}
		if n := i + 1; n > 0 && (n%20 == 0 || n == cfg.execSamples) {
			progress("exec round trip: %d/%d  A %s  B %s  C %s (medians so far)", n, cfg.execSamples,
				fmtMs2(median(st.ms[execA])), fmtMs2(median(st.ms[execB])), fmtMs2(median(st.ms[execC])))
		}
	}
	n := float64(cfg.execSamples)
	if cpu := treeCPU(s.pid); cpu >= 0 && serverCPU0 >= 0 {
		st.cpu[execA] = float64((cpu - serverCPU0).Microseconds()) / 1e3 / n
	}
	// B and C are the bench's own children: their CPU together, split by
	// their share of the wall time would be a guess, so it is given for
	// both at once.
	if cpu := childrenCPU(); cpu >= 0 {
		st.cpu[execB+execC] = float64((cpu - childCPU0).Microseconds()) / 1e3 / n
	}
	st.loadEnd = loadAverage()
	st.took = time.Since(began)
	return st, nil
}

// tempRoots are the temp areas harness serve makes writable by default:
// /tmp and $TMPDIR, canonical, without duplicates.
func tempRoots() []string {
	var out []string
	for _, d := range []string{"/tmp", os.Getenv("TMPDIR")} {
		if !filepath.IsAbs(d) {
			continue
		}
		if c, err := filepath.EvalSymlinks(d); err == nil {
			d = c
		}
		d = filepath.Clean(d)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// ownedDirs counts the directories owned by uid at or beneath root, not
// entering other users' directories nor following symlinks (what harness's
// protected-path search visits in a shared temp root), at most limit.
func ownedDirs(root string, uid, limit int) int {
	n := 0
	var walk func(dir string)
	walk = func(dir string) {
		if n >= limit {
			return
		}
		var st syscall.Stat_t
		if syscall.Lstat(dir, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != uid {
			return
		}
		n++
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.IsDir() {
				walk(filepath.Join(dir, e.Name()))
			}
		}
	}
	walk(root)
	return n
}

// bareBwrapArgs are the arguments internal/subproc's bwrapArgs produces for
// a command in the empty workspace ws with the temp roots temps (network
// denied, no protected path, the workspace's missing .git reserved), with
// /bin/true as the command in place of the inner stage and without the info
// descriptor.
func bareBwrapArgs(ws string, temps []string) []string {
	args := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--cap-drop", "ALL",
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/dev/shm",
		"--unshare-net",
	}
	roots := append([]string{ws}, temps...)
	slices.SortStableFunc(roots, func(a, b string) int { return len(a) - len(b) })
	for _, r := range roots {
		args = append(args, "--bind-try", r, r)
	}
	git := filepath.Join(ws, ".git")
	args = append(args, "--perms", "0555", "--tmpfs", git, "--remount-ro", git)
	return append(args, "--", "/bin/true")
}

// timeProcess runs path with args (no environment, in /, its own process
// group, killed if the bench dies) and returns the time from Start to the
// end of Wait.
func timeProcess(path string, args []string) (time.Duration, error) {
	var stderr bytes.Buffer
	cmd := &exec.Cmd{
		Path: path, Args: append([]string{filepath.Base(path)}, args...),
		Env: []string{}, Dir: "/", Stderr: &stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	err := cmd.Wait()
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	return d, nil
}

// treeCPU is the CPU time of process pid and of its children it has waited
// for (utime, stime, cutime and cstime of /proc/PID/stat, 10 ms ticks); -1
// when unknown.
func treeCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 15 {
		return -1
	}
	var ticks int64
	for _, s := range f[11:15] { // fields 14 to 17
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return -1
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// childrenCPU is the CPU time (user and system) of this process's waited-for
// children.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentile is the nearest-rank p-th percentile of xs (NaN when empty).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// fmtMs2 formats milliseconds with two decimals.
func fmtMs2(ms float64) string {
	if math.IsNaN(ms) || ms <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", ms)
}

// execFigures are the medians and p90 of A, B and C, and A's median over B's.
func (st *execStats) med(key string) float64 { return median(st.ms[key]) }
func (st *execStats) p90(key string) float64 { return percentile(st.ms[key], 90) }
func (st *execStats) ratio() float64         { return st.med(execA) / st.med(execB) }

// lines are the figures and targets, one per line, for stderr.
func (st *execStats) lines() []string {
	return []string{
		fmt.Sprintf("A  exec {\"command\":\"true\"} over MCP   median %s  p90 %s  (min %s, max %s)", fmtMs2(st.med(execA)), fmtMs2(st.p90(execA)), fmtMs2(slices.Min(st.ms[execA])), fmtMs2(slices.Max(st.ms[execA]))),
		fmt.Sprintf("B  bare bwrap /bin/true              median %s  p90 %s  (min %s, max %s)", fmtMs2(st.med(execB)), fmtMs2(st.p90(execB)), fmtMs2(slices.Min(st.ms[execB])), fmtMs2(slices.Max(st.ms[execB]))),
		fmt.Sprintf("C  /bin/sh -c true                   median %s  p90 %s  (min %s, max %s)", fmtMs2(st.med(execC)), fmtMs2(st.p90(execC)), fmtMs2(slices.Min(st.ms[execC])), fmtMs2(slices.Max(st.ms[execC]))),
		fmt.Sprintf("target A median <= %.0f ms: %s (%s)", execTargetMedianMs, fmtMs2(st.med(execA)), strings.Trim(status(-st.med(execA), -execTargetMedianMs), "*")),
		fmt.Sprintf("target A / B <= %.1fx: %s (%s)", execTargetRatio, fmtRatio(st.ratio()), strings.Trim(status(-st.ratio(), -execTargetRatio), "*")),
		fmt.Sprintf("CPU per sample: A (server and its children) %s; B and C together (the bench's children) %s; load average %s at the start, %s at the end; %d samples each in %s; %s directories of this user in the temp roots %s",
			fmtMs2(st.cpu[execA]), fmtMs2(st.cpu[execB+execC]), st.loadStart, st.loadEnd, st.samples, st.took.Round(100*time.Millisecond), fmtInt(st.tempDirs), strings.Join(st.roots, " ")),
	}
}

// printExec prints the figures on stderr.
func printExec(st *execStats) {
	progress("exec round trip (issue 22), %d interleaved samples each after %d warm-up rounds:", st.samples, st.warmups)
	for _, l := range st.lines() {
		fmt.Fprintf(os.Stderr, "  %s\n", l)
	}
	for i, f := range st.failures {
		fmt.Fprintf(os.Stderr, "  A's error result %d (tried again): %s\n", i+1, f)
	}
}

// renderExec renders the exec round trip's part of the generated section,
// its markers included; st nil or failed says so instead of figures.
func renderExec(st *execStats) string {
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("%s\n", execBeginMarker)
	pf("### Exec round trip (issue 22)\n\n")
	if st == nil || st.err != nil {
		why := "not measured"
		if st != nil {
			why = "not measured: " + st.err.Error()
		}
		pf("%s. `make bench-exec` measures it alone.\n%s\n", why, execEndMarker)
		return b.String()
	}
	pf("Measured %s on %d cores (Linux %s), load average (1 min) %s at the start and %s at the end; %d samples of each after %d ",
		st.date, runtime.NumCPU(), kernelRelease(), st.loadStart, st.loadEnd, st.samples, st.warmups)
	pf("untimed rounds, the three taking turns (A, B, C, A, B, C, ...), in %s. `make bench-exec` ", st.took.Round(100*time.Millisecond))
	pf("measures this part alone in seconds and rewrites only it (`cd bench && go run . -harness ../bin/harness ")
	pf("-only exec -out ../docs/benchmarks.md`).\n\n")
	pf("| contender | median | p90 | min | max |\n|---|---|---|---|---|\n")
	rows := []struct{ key, what string }{
		{execA, "A. `exec` of `{\"command\":\"true\"}` over MCP: `harness serve --mode workspace-write`, bubblewrap isolation, request sent to answer received"},
		{execB, "B. bare `bwrap` with the same namespaces and binds, running `/bin/true` (os/exec, Start to Wait)"},
		{execC, "C. `/bin/sh -c true` (os/exec, Start to Wait)"},
	}
	for _, r := range rows {
		pf("| %s | %s | %s | %s | %s |\n", r.what, fmtMs2(st.med(r.key)), fmtMs2(st.p90(r.key)), fmtMs2(slices.Min(st.ms[r.key])), fmtMs2(slices.Max(st.ms[r.key])))
	}
	pf("\n| target | at most | measured | status |\n|---|---|---|---|\n")
	pf("| A's median | %.0f ms | %s | %s |\n", execTargetMedianMs, fmtMs2(st.med(execA)), status(-st.med(execA), -execTargetMedianMs))
	pf("| A's median over B's | %.1fx | %s (p90 over p90: %s) | %s |\n", execTargetRatio, fmtRatio(st.ratio()), fmtRatio(st.p90(execA)/st.p90(execB)), status(-st.ratio(), -execTargetRatio))
	if n := len(st.failures); n > 0 {
		pf("\n**%d of A's calls returned an error result** and were tried again (not counted as samples); the first: `%s`.\n", n, strings.ReplaceAll(st.failures[0], "`", "'"))
	}
	pf("\nCPU per sample (user and system, 10 ms ticks over all samples): A, the server and every process it ")
	pf("waited for (bwrap, the inner stage, the shell), %s; B and C, the bench's own children together, %s.\n\n",
		fmtMs2(st.cpu[execA]), fmtMs2(st.cpu[execB+execC]))
	pf("A: `harness serve --workspace WS --mode workspace-write --log-level warn` (default runner `sandbox`, ")
	pf("isolation `bwrap`, temp roots %s; the environment's `HARNESS_*` variables removed), WS an empty ", strings.Join(quoteAll(st.roots), " and "))
	pf("throwaway directory under `%s`; one go-sdk client session over stdio; the time from sending ", st.workspace)
	pf("`tools/call` to decoding its answer, which must say `exit code 0`. It covers the protected-path scan of ")
	pf("the writable roots, the command's cgroup, bwrap, the inner stage (the harness binary again: Landlock, ")
	pf("seccomp, rlimits), `/bin/sh -c true`, the teardown and the MCP round trip. B: `%s` with the arguments ", st.bwrap)
	pf("`internal/subproc`'s `bwrapArgs` produces for an empty workspace (`--ro-bind / /`, `--dev /dev`, ")
	pf("`--proc /proc`, `--tmpfs /dev/shm`, `--bind-try` of the workspace and the temp roots, the workspace's ")
	pf("missing `.git` reserved by a read-only tmpfs, `--unshare-user --disable-userns --unshare-pid ")
	pf("--unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net`, `--new-session --die-with-parent ")
	pf("--cap-drop ALL`), with `/bin/true` as the command; started directly with os/exec (empty environment, ")
	pf("in `/`, its own process group), timed from `Start` to the end of `Wait`. C: `/bin/sh -c true`, the same way. ")
	pf("p90 is the nearest-rank 90th percentile. The temp roots held %s directories of the bench's user at the ", fmtInt(st.tempDirs))
	pf("start: the protected-path search opens each one again on every command (in a shared temp root only the ")
	pf("command user's entries count), so A grows with what that user keeps in `/tmp`.\n")
	pf("%s\n", execEndMarker)
	return b.String()
}

// kernelRelease is the running kernel's release ("?" when unknown).
func kernelRelease() string {
	raw, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(raw))
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return out
}

// updateExecMarked replaces the exec round trip's part of path's generated
// section with part, or, when it has none, puts part at the end of the
// generated section, where renderSection puts it.
func updateExecMarked(path, part string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin := bytes.Index(raw, []byte(execBeginMarker))
	end := bytes.Index(raw, []byte(execEndMarker))
	var out []byte
	switch {
	case begin >= 0 && end > begin:
		end += len(execEndMarker)
		if end < len(raw) && raw[end] == '\n' {
			end++
		}
		out = append(append(append(out, raw[:begin]...), part...), raw[end:]...)
	case begin >= 0 || end >= 0:
		return fmt.Errorf("%s: only one of %s and %s is present", path, execBeginMarker, execEndMarker)
	default:
		at := bytes.Index(raw, []byte(endMarker))
		if at < 0 {
			return errors.New(path + ": no generated section (" + beginMarker + " ... " + endMarker + ") to put the exec round trip in: run make bench once")
		}
		// As renderSection puts it: last, after a blank line.
		out = append(append(append(append(append(out, raw[:at]...), '\n'), part...), '\n'), raw[at:]...)
	}
	return writeAtomic(path, out)
}

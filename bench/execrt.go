package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The exec round trip (issues 22 and 34): how long `exec` of `true` takes
// over MCP against harness serve in workspace-write mode (bubblewrap
// isolation), and how much CPU it costs, next to what the same sandbox costs
// without harness (bare bwrap with the namespaces and binds harness's own
// bwrap got, running /bin/true) and to a plain `/bin/sh -c true`, in
// several scenarios: an empty workspace, workspaces of 100,000 files and
// of a million entries, and an empty workspace whose temp root holds 50,000
// entries that another goroutine churns, with each session's private temp
// area (the default) and with --shared-temp. In each scenario the three
// take turns sample by sample (A, B, C, A, B, C, ...), so load and
// frequency drift hit all three alike.

// Targets of issue 22 (the empty workspace).
const (
	execTargetMedianMs = 12.0 // A's median at most this
	execTargetRatio    = 2.5  // A's median over B's at most this
)

// Targets of issue 34.
const (
	execTargetWallRatio  = 1.5 // empty workspace: A's median wall over B's at most this
	execTargetCPURatio   = 2.0 // empty workspace: A's CPU per call over B's at most this
	execTargetScenario   = 1.2 // other scenarios: A's figure over the empty workspace's at most this
	execTargetFirstRatio = 2.0 // every scenario: the session's first call over its median at most this
)

// Markers of the exec round trip's part of the generated section, which
// `-only exec -out FILE` rewrites alone.
const (
	execBeginMarker = "<!-- bench-exec:begin -->"
	execEndMarker   = "<!-- bench-exec:end -->"
)

// Keys of the contenders: A, B and C; in every scenario but the empty
// workspace also A0, the empty workspace's server kept running, taking its
// turn in the same rounds (so that the scenario is compared with it under
// the same load).
const (
	execA  = "A"
	execA0 = "A0"
	execB  = "B"
	execC  = "C"
)

// execScenario is one setting of the exec round trip.
type execScenario struct {
	key  string // short name, for progress lines
	name string // for the tables
	// The workspace: dirs directories of files empty files each (none:
	// an empty workspace).
	dirs, files int
	// tempRoot: harness serve gets --temp-root of a directory of
	// tempDirs directories of tempFiles files each, which a goroutine
	// churns the whole time the scenario runs.
	tempRoot bool
	shared   bool // --shared-temp
	big      bool // skipped with -exec-big=false
}

// The churned temp root: 500 directories of 99 files, 50,000 entries.
const (
	tempDirs  = 500
	tempFiles = 99
)

// execScenarios are the scenarios, in the order they are measured; the
// first is the reference the others are compared with.
var execScenarios = []execScenario{
	{key: "empty", name: "empty workspace"},
	{key: "100k", name: "100,000 files (1,000 directories × 100)", dirs: 1000, files: 100},
	{key: "1m", name: "1,000,000 entries (10,000 directories × 99 files)", dirs: 10000, files: 99, big: true},
	{key: "temp", name: "empty workspace, churned temp root of 50,000 entries, private temp area (default)", tempRoot: true},
	{key: "temp-shared", name: "empty workspace, churned temp root of 50,000 entries, `--shared-temp`", tempRoot: true, shared: true},
}

// execStats are the exec round trip's measurements, one run per scenario.
type execStats struct {
	runs      []*execRun
	warmups   int
	samples   int
	bwrap     string // bwrap's path and version
	workspace string // parent directory of the throwaway directories
	churnGap  time.Duration
	loadStart string
	loadEnd   string
	date      string
	took      time.Duration
	err       error // the measurement failed as a whole (rendered instead of figures)
}

// execRun is one scenario's samples.
type execRun struct {
	sc      execScenario
	ms      map[string][]float64 // wall times in ms by contender key, in sample order
	cpu     map[string]float64   // CPU per sample in ms by contender key (-1: unknown)
	cpuBy   string               // how cpu was counted: "cgroup" (cpuGroup) or "" (rusage)
	first   float64              // the session's first exec, ms
	startup time.Duration        // spawn to the answer of tools/list
	entries int                  // entries in the workspace, or in the temp root
	made    time.Duration        // making the fixture, when this scenario made it
	churn   float64              // churn cycles per second (temp-root scenarios)
	// churnBusy is how many of the churn's removals failed (harness was
	// making something in the entry) and were tried again later.
	churnBusy int
	bwrapN    int  // arguments of the bare bwrap (probed from harness's)
	joined    bool // the bare bwrap joins a network namespace made once, through nsenter
	// bwrapDropped is how many operations of harness's bwrap on the
	// churn's entries the bare bwrap leaves out.
	bwrapDropped int
	failures     []string // harness's exec calls that returned an error result, tried again
	calls        int      // harness's exec calls (A's, A0's, the first, the probe)
	gaveUp       string   // why the scenario stopped trying after error results
	loadA        string
	loadZ        string
	took         time.Duration
	skipped      string // why it was not measured (a flag)
	err          error  // the scenario failed (rendered instead of figures)
}

// measured reports whether the run has figures.
func (r *execRun) measured() bool {
	return r != nil && r.skipped == "" && r.err == nil && len(r.ms[execA]) > 0
}

// execFailure is an exec call that returned an error result.
type execFailure struct{ msg string }

func (e *execFailure) Error() string { return "exec over MCP: " + e.msg }

// maxExecFailures is how many error results of harness's exec a scenario
// tolerates in all (each tried again) before it gives up, and
// maxConsecutiveFailures how many in a row.
func maxExecFailures(samples int) int { return max(20, samples) }

const maxConsecutiveFailures = 20

// execCommand is A's call.
var execCommand = &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "true"}}

// probeCommand prints, base64-encoded, the command line of the sandbox's
// pid 1: bwrap itself, with the arguments harness gave it; then the
// command's network namespace.
var probeCommand = &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "base64 -w0 /proc/1/cmdline; echo; readlink /proc/self/ns/net"}}

// measureExec measures the exec round trip in every scenario (but the big
// one with -exec-big=false). It returns a function removing the fixtures,
// which the caller runs when it likes (removing a million entries slows the
// creation of new files on ext4 without a journal for half a minute).
func measureExec(ctx context.Context, cfg config, harnessBin string) (*execStats, func(), error) {
	began := time.Now()
	nothing := func() {}
	st := &execStats{
		warmups:   cfg.execWarmups,
		samples:   cfg.execSamples,
		churnGap:  cfg.execChurnPause,
		loadStart: loadAverage(),
		date:      time.Now().Format("2006-01-02 15:04"),
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, nothing, fmt.Errorf("exec round trip: %w (apt-get install bubblewrap)", err)
	}
	if bwrap, err = filepath.EvalSymlinks(bwrap); err != nil {
		return nil, nothing, err
	}
	out, _ := exec.CommandContext(ctx, bwrap, "--version").Output()
	st.bwrap = strings.TrimSpace(bwrap + " (" + strings.TrimSpace(string(out)) + ")")

	parent, err := filepath.Abs(cfg.execDir)
	if err != nil {
		return nil, nothing, err
	}
	if parent, err = filepath.EvalSymlinks(parent); err != nil {
		return nil, nothing, fmt.Errorf("exec round trip: -exec-dir: %w", err)
	}
	st.workspace = parent
	dir, err := os.MkdirTemp(parent, "harness-bench-exec-")
	if err != nil {
		return nil, nothing, err
	}
	cleanup := func() {
		t0 := time.Now()
		_ = os.RemoveAll(dir)
		progress("exec round trip: removed %s in %s", dir, time.Since(t0).Round(100*time.Millisecond))
	}

	temp := &tempFixture{path: filepath.Join(dir, "temp-root")}
	var ref *server // the empty workspace's server, kept for A0
	defer func() {
		if ref != nil {
			if err := ref.close(); err != nil {
				progress("closing %s: %v", ref.spec.key, err)
			}
		}
	}()
	for _, sc := range execScenarios {
		if ctx.Err() != nil {
			return nil, cleanup, ctx.Err()
		}
		if sc.big && !cfg.execBig {
			st.runs = append(st.runs, &execRun{sc: sc, skipped: "skipped (-exec-big=false)"})
			progress("exec round trip [%s]: skipped (-exec-big=false)", sc.key)
			continue
		}
		r, s := measureScenario(ctx, cfg, harnessBin, bwrap, dir, sc, temp, ref)
		if s != nil {
			ref = s
		}
		if r.err != nil {
			if ctx.Err() != nil {
				return nil, cleanup, ctx.Err()
			}
			progress("exec round trip [%s]: %v", sc.key, r.err)
		}
		st.runs = append(st.runs, r)
	}
	st.loadEnd = loadAverage()
	st.took = time.Since(began)
	return st, cleanup, nil
}

// tempFixture is the churned temp root, made once for both scenarios that
// use it.
type tempFixture struct {
	path    string
	entries int
	err     error
	made    bool
}

// ensure makes the temp root (mode 1777, like /tmp) and its entries once;
// it returns how long that took, 0 when it was already made.
func (t *tempFixture) ensure(ctx context.Context) (time.Duration, error) {
	if t.made || t.err != nil {
		return 0, t.err
	}
	t0 := time.Now()
	t.err = os.Mkdir(t.path, 0o755)
	if t.err == nil {
		t.err = os.Chmod(t.path, os.ModePerm|os.ModeSticky)
	}
	if t.err == nil {
		t.entries, t.err = makeTree(ctx, t.path, tempDirs, tempFiles, "temp root")
		syncDisk()
	}
	t.made = t.err == nil
	return time.Since(t0), t.err
}

// measureScenario measures one scenario: it makes its fixture (the temp
// root once for both scenarios using it), starts harness serve, times the
// session's first exec, probes the arguments of harness's bwrap, then runs
// cfg.execWarmups untimed rounds and cfg.execSamples timed ones, each round
// A, A0 (on ref, the empty workspace's server, when not nil), B, C in that
// order. The empty workspace's server, measured without ref, is returned
// running (the caller closes it) when its run has figures.
func measureScenario(ctx context.Context, cfg config, harnessBin, bwrap, dir string, sc execScenario, temp *tempFixture, ref *server) (r *execRun, kept *server) {
	began := time.Now()
	r = &execRun{
		sc:    sc,
		ms:    map[string][]float64{},
		cpu:   map[string]float64{execA: -1, execB: -1, execC: -1},
		loadA: loadAverage(),
	}
	defer func() {
		r.loadZ = loadAverage()
		r.took = time.Since(began)
	}()
	fail := func(err error) (*execRun, *server) {
		r.err = err
		return r, nil
	}

	// Two workspaces: harness's, and an empty one for the bare bwrap,
	// which makes the mount points of the reserved paths in it (harness
	// must not see them come and go in its own: they would be protected
	// paths, and changes its scan watches).
	wsA, wsB := filepath.Join(dir, sc.key, "serve"), filepath.Join(dir, sc.key, "bwrap")
	for _, d := range []string{wsA, wsB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
	}
	if sc.dirs > 0 {
		progress("exec round trip [%s]: making %s entries in %s (the million takes a minute or more on 2 cores)", sc.key, fmtInt(sc.dirs*(sc.files+1)), wsA)
		t0 := time.Now()
		n, err := makeTree(ctx, wsA, sc.dirs, sc.files, "workspace")
		syncDisk()
		r.made, r.entries = time.Since(t0), n
		if err != nil {
			return fail(fmt.Errorf("making the workspace: %w", err))
		}
		progress("exec round trip [%s]: made %s entries in %s (synced)", sc.key, fmtInt(n), r.made.Round(100*time.Millisecond))
	}
	args := []string{"serve", "--workspace", wsA, "--mode", "workspace-write", "--log-level", "warn"}
	if sc.tempRoot {
		if !temp.made {
			progress("exec round trip [%s]: making the temp root %s (%s entries)", sc.key, temp.path, fmtInt(tempDirs*(tempFiles+1)))
		}
		made, err := temp.ensure(ctx)
		if err != nil {
			return fail(fmt.Errorf("making the temp root: %w", err))
		}
		if made > 0 {
			r.made = made
			progress("exec round trip [%s]: made %s entries in %s (synced)", sc.key, fmtInt(temp.entries), made.Round(100*time.Millisecond))
		}
		r.entries = temp.entries
		args = append(args, "--temp-root", temp.path)
		if sc.shared {
			args = append(args, "--shared-temp")
		}
		// The churn runs the whole time: server start, first call,
		// warm-ups and samples.
		ch := startChurn(ctx, temp.path, cfg.execChurnPause)
		defer func() {
			if err := ch.stop(); err != nil && r.err == nil {
				r.err = fmt.Errorf("churning the temp root: %w", err)
			}
			r.churn = ch.rate()
			r.churnBusy = int(ch.busy.Load())
		}()
	}

	spec := serverSpec{
		key:   "harness-exec-" + sc.key,
		label: "harness serve (exec, " + sc.key + ")",
		command: func(string) *exec.Cmd {
			cmd := exec.Command(harnessBin, args...)
			cmd.Env = withoutHarnessEnv(os.Environ())
			return cmd
		},
		tools: []string{"exec"},
	}
	s, err := startServer(ctx, spec, wsA, cfg.protocol, true)
	if err != nil {
		return fail(err)
	}
	// CPU is counted by cgroup where the machine has cgroup v1's cpuacct
	// (cpuGroup: rusage misses a sandbox's pid 1), else by rusage.
	if g, err := newCPUGroup("A-" + sc.key); err == nil {
		if err := g.addProcess(s.pid); err != nil {
			g.remove()
			progress("exec round trip [%s]: CPU by rusage: %v", sc.key, err)
		} else {
			s.cpuGroup = g
		}
	} else {
		progress("exec round trip [%s]: CPU by rusage: %v", sc.key, err)
	}
	var groupB, groupC *cpuGroup
	if s.cpuGroup != nil {
		if groupB, err = newCPUGroup("B-" + sc.key); err != nil {
			return fail(err)
		}
		defer groupB.remove()
		if groupC, err = newCPUGroup("C-" + sc.key); err != nil {
			return fail(err)
		}
		defer groupC.remove()
	}
	defer func() {
		if kept == s {
			return
		}
		if err := s.close(); err != nil {
			progress("closing %s: %v", spec.key, err)
		}
	}()
	r.startup = s.startup

	callOn := func(s *server, who string) func() (time.Duration, time.Duration, error) {
		return func() (time.Duration, time.Duration, error) {
			r.calls++
			t0 := time.Now()
			res, err := s.sess.CallTool(ctx, execCommand)
			d := time.Since(t0)
			if err != nil {
				return 0, -1, fmt.Errorf("exec over MCP: %w\nserver stderr:\n%s", err, s.stderr)
			}
			if res.IsError || !strings.HasPrefix(resultText(res), "exit code 0") {
				return 0, -1, &execFailure{msg: who + strings.TrimSpace(resultText(res)) + metaCode(res)}
			}
			return d, -1, nil
		}
	}
	runA := callOn(s, "")
	// retry runs run again after each error result, while the scenario
	// tolerates more.
	retry := func(run func() (time.Duration, time.Duration, error)) (time.Duration, time.Duration, error) {
		for consecutive := 1; ; consecutive++ {
			d, cpu, err := run()
			var failed *execFailure
			if !errors.As(err, &failed) {
				return d, cpu, err
			}
			// A call the runner refused (a race of its own, or what
			// another process changed where it looks): counted, shown,
			// tried again, up to a point.
			r.failures = append(r.failures, failed.msg)
			if consecutive >= maxConsecutiveFailures || len(r.failures) > maxExecFailures(cfg.execSamples) || ctx.Err() != nil {
				r.gaveUp = fmt.Sprintf("%d of its %d `exec` calls returned an error result, the last %d in a row", len(r.failures), r.calls, consecutive)
				return 0, -1, err
			}
			if n := len(r.failures); n <= 3 || n%10 == 0 {
				progress("exec round trip [%s]: harness's exec failed (%d so far), trying again: %s", sc.key, n, failed.msg)
			}
		}
	}

	// The session's first command, right after tools/list answered.
	d, _, err := retry(runA)
	if err != nil {
		return fail(fmt.Errorf("first call: %w", err))
	}
	r.first = float64(d.Nanoseconds()) / 1e6

	// harness's bwrap arguments, from a second server of the same
	// configuration whose bwrap is the recording one (the arguments are
	// on a descriptor, not in /proc/1/cmdline); kept until the scenario
	// ends, so the paths its session made stay for B's binds.
	rec, err := newRecorder(dir, bwrap)
	if err != nil {
		return fail(fmt.Errorf("the recording bwrap: %w", err))
	}
	defer rec.remove()
	probeSpec := spec
	probeSpec.key += "-probe"
	probeSpec.command = func(string) *exec.Cmd {
		cmd := exec.Command(harnessBin, args...)
		cmd.Env = rec.env(withoutHarnessEnv(os.Environ()))
		return cmd
	}
	probe, err := startServer(ctx, probeSpec, wsA, cfg.protocol, true)
	if err != nil {
		return fail(fmt.Errorf("the probe server: %w", err))
	}
	defer func() {
		if err := probe.close(); err != nil {
			progress("closing %s: %v", probeSpec.key, err)
		}
	}()
	var argv []string
	var netns string
	_, _, err = retry(func() (time.Duration, time.Duration, error) {
		var err error
		r.calls++
		if argv, netns, err = probeBwrap(ctx, probe); err == nil {
			argv, err = rec.last(argv)
		}
		return 0, -1, err
	})
	if err != nil {
		return fail(fmt.Errorf("probing harness's bwrap: %w", err))
	}
	// harness's bwrap makes no network namespace of its own when its
	// command joins the session's (it runs under nsenter): the bare bwrap
	// then joins one made the same way, through nsenter too.
	own, _ := os.Readlink("/proc/self/ns/net")
	var holder *netHolder
	if !slices.Contains(argv, "--unshare-net") && netns != own {
		if holder, err = makeNetHolder(bwrap); err != nil {
			return fail(fmt.Errorf("a network namespace for the bare bwrap: %w", err))
		}
		defer holder.close()
		r.joined = true
	}
	fdBase := 3
	if holder != nil {
		fdBase = 5 // after the two namespaces
	}
	var drop func(string) bool
	if sc.tempRoot {
		churned := filepath.Join(temp.path, churnPrefix)
		drop = func(p string) bool { return strings.HasPrefix(p, churned) }
	}
	bArgs, nfd, dropped, err := mirrorBwrapArgs(argv, wsA, wsB, fdBase, drop)
	if err != nil {
		return fail(err)
	}
	r.bwrapDropped = dropped
	r.bwrapN = len(bArgs) - 1 // without /bin/true (the nsenter arguments are added below)
	bPath := bwrap
	var extra []*os.File
	if holder != nil {
		nsenter, err := exec.LookPath("nsenter")
		if err != nil {
			return fail(fmt.Errorf("the bare bwrap joins a network namespace: %w", err))
		}
		bPath = nsenter
		bArgs = append([]string{"--user=/proc/self/fd/3", "--net=/proc/self/fd/4", "--preserve-credentials", "--", bwrap}, bArgs...)
		extra = append(extra, holder.user, holder.net)
	}
	for range nfd {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return fail(err)
		}
		defer func() { _ = f.Close() }()
		extra = append(extra, f)
	}
	progress("exec round trip [%s]: harness serve (pid %d) on %s, started in %s; first exec %s; bare bwrap replays harness's bwrap (%d arguments, %d operations on the churn's entries left out, joining a network namespace through nsenter: %t); %d warm-up rounds, then %d rounds of A, B, C",
		sc.key, s.pid, wsA, fmtMs2(float64(r.startup.Microseconds())/1e3), fmtMs2(r.first), r.bwrapN, r.bwrapDropped, r.joined, cfg.execWarmups, cfg.execSamples)

	runB := func() (time.Duration, time.Duration, error) {
		d, cpu, err := timeProcess(bPath, bArgs, extra, groupB)
		// The mount points bwrap made for the reserved paths, removed as
		// harness does after a command (release), outside the timed part.
		clearDir(wsB)
		return d, cpu, err
	}
	runC := func() (time.Duration, time.Duration, error) {
		return timeProcess("/bin/sh", []string{"-c", "true"}, nil, groupC)
	}
	type contender struct {
		key string
		run func() (time.Duration, time.Duration, error)
	}
	contenders := []contender{{execA, runA}}
	if ref != nil {
		contenders = append(contenders, contender{execA0, callOn(ref, "(A0, the empty workspace's server) ")})
	}
	contenders = append(contenders, contender{execB, runB}, contender{execC, runC})

	var serverCPU0, refCPU0, allChildren0 time.Duration
	childCPU := map[string]time.Duration{}
	groups := map[string]*cpuGroup{execA: s.cpuGroup, execB: groupB, execC: groupC}
	if ref != nil {
		groups[execA0] = ref.cpuGroup
	}
	group0 := map[string]time.Duration{}
	for i := -cfg.execWarmups; i < cfg.execSamples; i++ {
		if i == 0 {
			allChildren0 = childrenCPU()
			serverCPU0 = treeCPU(s.pid)
			if ref != nil {
				refCPU0 = treeCPU(ref.pid)
			}
			for k, g := range groups {
				group0[k] = g.usage()
			}
		}
		for _, c := range contenders {
			if ctx.Err() != nil {
				return fail(ctx.Err())
			}
			d, cpu, err := retry(c.run)
			if err != nil {
				return fail(fmt.Errorf("%s: %w", c.key, err))
			}
			if i >= 0 {
				r.ms[c.key] = append(r.ms[c.key], float64(d.Nanoseconds())/1e6)
				if cpu >= 0 && childCPU[c.key] >= 0 {
					childCPU[c.key] += cpu
				} else {
					childCPU[c.key] = -1
				}
			}
		}
		if n := i + 1; n > 0 && (n%20 == 0 || n == cfg.execSamples) {
			a0 := ""
			if ref != nil {
				a0 = "  A0 " + fmtMs2(median(r.ms[execA0]))
			}
			progress("exec round trip [%s]: %d/%d  A %s%s  B %s  C %s (medians so far)", sc.key, n, cfg.execSamples,
				fmtMs2(median(r.ms[execA])), a0, fmtMs2(median(r.ms[execB])), fmtMs2(median(r.ms[execC])))
		}
	}
	n := float64(cfg.execSamples)
	if cpu := treeCPU(s.pid); cpu >= 0 && serverCPU0 >= 0 {
		r.cpu[execA] = float64((cpu - serverCPU0).Microseconds()) / 1e3 / n
	}
	if ref != nil {
		if cpu := treeCPU(ref.pid); cpu >= 0 && refCPU0 >= 0 {
			r.cpu[execA0] = float64((cpu - refCPU0).Microseconds()) / 1e3 / n
		}
	}
	for _, k := range []string{execB, execC} {
		if c := childCPU[k]; c >= 0 {
			r.cpu[k] = float64(c.Microseconds()) / 1e3 / n
		}
	}
	if s.cpuGroup != nil {
		// By cgroup: what every contender's tasks used over the timed
		// rounds, once the last bwrap's pid 1 has ended.
		time.Sleep(200 * time.Millisecond)
		r.cpuBy = "cgroup"
		for k, g := range groups {
			if u := g.usage(); u >= 0 && group0[k] >= 0 && g != nil {
				r.cpu[k] = float64((u - group0[k]).Microseconds()) / 1e3 / n
			} else {
				r.cpu[k] = -1
			}
		}
	}
	// A check of the per-child figures: the bench's children reaped over
	// the timed rounds are B's and C's runs, nothing else.
	if all := childrenCPU(); all >= 0 && allChildren0 >= 0 && childCPU[execB] >= 0 && childCPU[execC] >= 0 {
		if sum := childCPU[execB] + childCPU[execC]; math.Abs(float64(all-allChildren0-sum)) > 0.05*float64(sum) {
			progress("exec round trip [%s]: B's and C's CPU from their own rusage, %s, differ from the bench's children's, %s", sc.key, sum, all-allChildren0)
		}
	}
	if ref == nil && sc.key == "empty" {
		kept = s
	}
	return r, kept
}

// probeBwrap runs the probe command in the session and returns the command
// line of harness's bwrap and the command's network namespace (as
// readlink shows it); an error result is an *execFailure.
func probeBwrap(ctx context.Context, s *server) ([]string, string, error) {
	res, err := s.sess.CallTool(ctx, probeCommand)
	if err != nil {
		return nil, "", fmt.Errorf("%w\nserver stderr:\n%s", err, s.stderr)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	out, _ := sc["stdout"].(string)
	if res.IsError || out == "" || !strings.HasPrefix(resultText(res), "exit code 0") {
		return nil, "", &execFailure{msg: strings.TrimSpace(resultText(res)) + metaCode(res)}
	}
	cmdline, netns, _ := strings.Cut(strings.TrimSpace(out), "\n")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cmdline))
	if err != nil {
		return nil, "", err
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00"), strings.TrimSpace(netns), nil
}

// netHolder holds a user and a network namespace made once, as harness
// makes one per session for its commands (they join it through nsenter
// rather than each making and tearing down its own): bwrap with a new
// user and network namespace around a shell that says it is ready and
// waits, whose namespaces are opened, then it is let go.
type netHolder struct {
	user, net *os.File
}

// makeNetHolder makes the namespaces with bwrap.
func makeNetHolder(bwrap string) (*netHolder, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer func() { _ = stdinW.Close() }()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		_ = stdinR.Close()
		return nil, err
	}
	defer func() { _ = stdoutR.Close() }()
	var stderr bytes.Buffer
	cmd := &exec.Cmd{
		Path: bwrap,
		Args: []string{
			"bwrap", "--unshare-user", "--unshare-net", "--die-with-parent", "--new-session",
			"--ro-bind", "/", "/", "--", "/bin/sh", "-c", "echo $$; read -r _ || :",
		},
		Env: []string{}, Dir: "/", Stdin: stdinR, Stdout: stdoutW, Stderr: &stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	err = cmd.Start()
	_, _ = stdinR.Close(), stdoutW.Close()
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = stdinW.Close() // the shell reads its end and exits, and bwrap with it
		_ = cmd.Wait()
	}()
	_ = stdoutR.SetReadDeadline(time.Now().Add(10 * time.Second))
	line := make([]byte, 64)
	n, _ := stdoutR.Read(line)
	if strings.TrimSpace(string(line[:n])) == "" {
		return nil, fmt.Errorf("bwrap did not make the network namespace: %s", strings.TrimSpace(stderr.String()))
	}
	// The shell's own pid is its pid in bwrap's PID namespace, if any: it
	// shares the host's here (no --unshare-pid), so $$ is the host pid.
	dir := "/proc/" + strings.TrimSpace(string(line[:n])) + "/ns/"
	h := &netHolder{}
	if h.user, err = os.Open(dir + "user"); err != nil {
		return nil, err
	}
	if h.net, err = os.Open(dir + "net"); err != nil {
		_ = h.user.Close()
		return nil, err
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	if got, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(h.net.Fd()))); got == own {
		h.close()
		return nil, errors.New("the network namespace made is this process's own")
	}
	return h, nil
}

func (h *netHolder) close() {
	if h != nil {
		_, _ = h.user.Close(), h.net.Close()
	}
}

// bwrapArity is how many arguments each bwrap option the mirror knows
// takes; bwrapModifiers are those that apply to the next operation
// (--perms, --size).
var (
	bwrapArity = map[string]int{
		"--die-with-parent": 0, "--new-session": 0, "--unshare-user": 0, "--unshare-user-try": 0,
		"--disable-userns": 0, "--assert-userns-disabled": 0, "--unshare-pid": 0, "--unshare-ipc": 0,
		"--unshare-uts": 0, "--unshare-cgroup": 0, "--unshare-cgroup-try": 0, "--unshare-net": 0,
		"--unshare-all": 0, "--share-net": 0, "--as-pid-1": 0, "--clearenv": 0,
		"--cap-drop": 1, "--cap-add": 1, "--uid": 1, "--gid": 1, "--hostname": 1, "--chdir": 1,
		"--unsetenv": 1, "--dev": 1, "--proc": 1, "--mqueue": 1, "--tmpfs": 1, "--dir": 1,
		"--remount-ro": 1, "--perms": 1, "--size": 1, "--exec-label": 1, "--file-label": 1,
		"--lock-file": 1, "--argv0": 1, "--info-fd": 1, "--json-status-fd": 1,
		"--bind": 2, "--bind-try": 2, "--ro-bind": 2, "--ro-bind-try": 2, "--dev-bind": 2,
		"--dev-bind-try": 2, "--symlink": 2, "--chmod": 2, "--setenv": 2,
		"--ro-bind-data": 2, "--bind-data": 2, "--file": 2,
	}
	bwrapModifiers = map[string]bool{"--perms": true, "--size": true}
)

// mirrorBwrapArgs turns argv, the command line of harness's bwrap, into the
// bare bwrap's arguments: the same options, namespaces, binds, masks and
// reserved paths, the workspace wsA swapped for wsB, the data of each
// --ro-bind-data, --bind-data and --file read from /dev/null (given as the
// descriptors fdBase, fdBase+1, ...; it returns how many), without
// --info-fd, and /bin/true in place of harness's inner stage. It leaves out each
// operation (with its --perms or --size) on a path drop reports (the
// churn's entries, which come and go: a replay of their binds would fail or
// make their mount points anew) and returns how many it left out.
func mirrorBwrapArgs(argv []string, wsA, wsB string, fdBase int, drop func(string) bool) (args []string, fds, dropped int, err error) {
	swap := func(p string) string {
		if p == wsA {
			return wsB
		}
		if rest, ok := strings.CutPrefix(p, wsA+"/"); ok {
			return wsB + "/" + rest
		}
		return p
	}
	var pending []string // modifiers waiting for their operation
	for i := 1; i < len(argv); {
		opt := argv[i]
		if opt == "--" {
			if i+1 >= len(argv) {
				return nil, 0, 0, errors.New("probing harness's bwrap: no command after --")
			}
			return append(args, "--", "/bin/true"), fds, dropped, nil
		}
		n, ok := bwrapArity[opt]
		if !ok {
			return nil, 0, 0, fmt.Errorf("probing harness's bwrap: cannot replay %s (an option the mirror does not know)", opt)
		}
		if i+n >= len(argv) {
			return nil, 0, 0, fmt.Errorf("probing harness's bwrap: %s without its arguments", opt)
		}
		op := slices.Clone(argv[i : i+1+n])
		i += 1 + n
		switch {
		case bwrapModifiers[opt]:
			pending = append(pending, op...)
			continue
		case opt == "--info-fd" || opt == "--json-status-fd":
			continue // what bwrap reports there is for harness
		}
		skip := false
		for j := 1; j < len(op); j++ {
			if strings.HasPrefix(op[j], "/") {
				skip = skip || (drop != nil && drop(op[j]))
				op[j] = swap(op[j])
			}
		}
		if skip {
			dropped++
			pending = nil
			continue
		}
		if opt == "--ro-bind-data" || opt == "--bind-data" || opt == "--file" {
			op[1] = strconv.Itoa(fdBase + fds)
			fds++
		}
		args = append(append(args, pending...), op...)
		pending = nil
	}
	return nil, 0, 0, fmt.Errorf("probing harness's bwrap: no -- in %q", argv)
}

// clearDir removes the entries of dir (not recursively: the empty mount
// points bwrap left).
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
}

// timeProcess runs path with args (no environment, in /, its own process
// group, killed if the bench dies, extra as the descriptors 3, 4, ...; in
// the cpuacct group g, when not nil) and
// returns the time from Start to the end of Wait and the CPU time (user and
// system) the kernel reports for that child and what it waited for.
func timeProcess(path string, args []string, extra []*os.File, g *cpuGroup) (time.Duration, time.Duration, error) {
	var stderr bytes.Buffer
	cmd := &exec.Cmd{
		Path: path, Args: append([]string{filepath.Base(path)}, args...),
		Env: []string{}, Dir: "/", Stderr: &stderr, ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	t0 := time.Now()
	var err error
	if g != nil {
		var waited func()
		t0, waited, err = g.start(cmd)
		if err == nil {
			defer waited()
		}
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return 0, -1, err
	}
	err = cmd.Wait()
	d := time.Since(t0)
	if err != nil {
		return 0, -1, fmt.Errorf("%s: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	cpu := time.Duration(-1)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return d, cpu, nil
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

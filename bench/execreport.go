package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// fmtMs2 formats milliseconds with two decimals.
func fmtMs2(ms float64) string {
	if math.IsNaN(ms) || ms <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", ms)
}

// med, p90, lo and hi are the median, nearest-rank 90th percentile, minimum
// and maximum of contender key's wall times (NaN when not measured).
func (r *execRun) med(key string) float64 {
	if len(r.ms[key]) == 0 {
		return math.NaN()
	}
	return median(r.ms[key])
}
func (r *execRun) p90(key string) float64 { return percentile(r.ms[key], 90) }
func (r *execRun) lo(key string) float64 {
	if len(r.ms[key]) == 0 {
		return math.NaN()
	}
	return slices.Min(r.ms[key])
}

func (r *execRun) hi(key string) float64 {
	if len(r.ms[key]) == 0 {
		return math.NaN()
	}
	return slices.Max(r.ms[key])
}

// cpuOf is contender key's CPU per call in ms (NaN when unknown).
func (r *execRun) cpuOf(key string) float64 {
	if v, ok := r.cpu[key]; ok && v >= 0 {
		return v
	}
	return math.NaN()
}

// wallRatio and cpuRatio are A's figure over B's.
func (r *execRun) wallRatio() float64 { return r.med(execA) / r.med(execB) }
func (r *execRun) cpuRatio() float64  { return r.cpuOf(execA) / r.cpuOf(execB) }

// entriesText describes the scenario's entries for the tables.
func (r *execRun) entriesText() string {
	sc := r.sc
	switch {
	case sc.tempRoot:
		n := r.entries
		if n == 0 {
			n = tempDirs * (tempFiles + 1)
		}
		return "0; temp root " + fmtInt(n) + ", churned"
	case sc.dirs > 0:
		n := r.entries
		if n == 0 {
			n = sc.dirs * (sc.files + 1)
		}
		return fmtInt(n)
	}
	return "0"
}

// why is what a run without figures shows in their place.
func (r *execRun) why() string {
	switch {
	case r.skipped != "":
		return r.skipped
	case r.gaveUp != "":
		return "**harness's commands failed**: " + r.gaveUp + " (see below)"
	case r.err != nil:
		return "not measured: " + firstLine(r.err.Error())
	}
	return "not measured"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// base is the empty workspace's run, nil when it has no figures.
// byCgroup reports whether every measured scenario counted CPU by cgroup
// (cpuGroup).
func (st *execStats) byCgroup() bool {
	n := 0
	for _, r := range st.runs {
		if r.measured() {
			if r.cpuBy != "cgroup" {
				return false
			}
			n++
		}
	}
	return n > 0
}

func (st *execStats) base() *execRun {
	for _, r := range st.runs {
		if r.sc.key == "empty" && r.measured() {
			return r
		}
	}
	return nil
}

// execTarget is one target of issues 22 and 34: value at most limit.
type execTarget struct {
	issue int
	what  string
	limit float64
	unit  string  // "x" (a ratio) or " ms"
	value float64 // NaN: not measured
	shown string  // how the value was reached, e.g. "27.10 ms / 18.20 ms"
	// failed: harness's commands failed in the scenario, so the target is
	// missed whatever the figures.
	failed bool
}

func (t execTarget) status() string {
	switch {
	case t.failed:
		return "**missed** (commands failed)"
	case math.IsNaN(t.value) || math.IsInf(t.value, 0):
		return "not measured"
	case t.value <= t.limit:
		return "met"
	}
	return "**missed**"
}

func (t execTarget) fmtValue(v float64) string {
	if t.unit == " ms" {
		return fmtMs2(v)
	}
	return fmtRatio(v)
}

// targets are the targets, issue 34's first.
func (st *execStats) targets() []execTarget {
	var out []execTarget
	base := st.base()
	nan := math.NaN()
	pick := func(r *execRun, f func(*execRun) float64) float64 {
		if r == nil || !r.measured() {
			return nan
		}
		return f(r)
	}
	out = append(out,
		execTarget{
			34, "empty workspace: harness wall / bare bwrap wall (medians)", execTargetWallRatio, "x",
			pick(base, (*execRun).wallRatio), ratioShown(base, func(r *execRun) (float64, float64) { return r.med(execA), r.med(execB) }), false,
		},
		execTarget{
			34, "empty workspace: harness CPU / bare bwrap CPU (per call)", execTargetCPURatio, "x",
			pick(base, (*execRun).cpuRatio), ratioShown(base, func(r *execRun) (float64, float64) { return r.cpuOf(execA), r.cpuOf(execB) }), false,
		})
	for _, r := range st.runs {
		if r.sc.key == "empty" {
			continue
		}
		// The empty workspace's server took its turn in this scenario's
		// rounds (A0): the scenario is compared with that, under the same
		// load; without it, with the empty workspace's own run.
		pair := func(a, a0 func(*execRun) float64) (float64, string) {
			switch {
			case !r.measured():
				return nan, r.why()
			case len(r.ms[execA0]) > 0:
				return a(r) / a0(r), fmt.Sprintf("%s / %s, the empty workspace's server in the same rounds", fmtMs2(a(r)), fmtMs2(a0(r)))
			case base != nil:
				return a(r) / a(base), fmt.Sprintf("%s / %s, the empty workspace's run", fmtMs2(a(r)), fmtMs2(a(base)))
			}
			return nan, "the empty workspace not measured"
		}
		wall, wallShown := pair(func(r *execRun) float64 { return r.med(execA) }, func(r *execRun) float64 { return r.med(execA0) })
		cpu, cpuShown := pair(func(r *execRun) float64 { return r.cpuOf(execA) }, func(r *execRun) float64 { return r.cpuOf(execA0) })
		failed := r.gaveUp != ""
		out = append(out,
			execTarget{34, r.sc.name + ": harness wall / the empty workspace's", execTargetScenario, "x", wall, wallShown, failed},
			execTarget{34, r.sc.name + ": harness CPU / the empty workspace's", execTargetScenario, "x", cpu, cpuShown, failed})
	}
	for _, r := range st.runs {
		out = append(out, execTarget{
			34, r.sc.name + ": first call / the median call", execTargetFirstRatio, "x",
			pick(r, func(r *execRun) float64 { return r.first / r.med(execA) }),
			ratioShown(r, func(r *execRun) (float64, float64) { return r.first, r.med(execA) }), r.gaveUp != "",
		})
	}
	out = append(out,
		execTarget{22, "empty workspace: harness wall (median)", execTargetMedianMs, " ms", pick(base, func(r *execRun) float64 { return r.med(execA) }), "", false},
		execTarget{22, "empty workspace: harness wall / bare bwrap wall (medians)", execTargetRatio, "x", pick(base, (*execRun).wallRatio), "", false})
	return out
}

// failureKind is one kind of error result and how many there were.
type failureKind struct {
	msg string
	n   int
}

// failureKinds groups error results by their first line with every number
// replaced by N, most frequent first.
func failureKinds(msgs []string) []failureKind {
	counts := map[string]int{}
	for _, m := range msgs {
		counts[digitsRe.ReplaceAllString(hexRe.ReplaceAllString(firstLine(m), "H"), "N")]++
	}
	var out []failureKind
	for m, n := range counts {
		out = append(out, failureKind{m, n})
	}
	slices.SortFunc(out, func(a, b failureKind) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.msg, b.msg)
	})
	return out
}

var (
	hexRe    = regexp.MustCompile(`[0-9a-f]{16,}`)
	digitsRe = regexp.MustCompile(`[0-9]+`)
)

// ratioShown is "a / b" of f's two figures of r, or why r has none.
func ratioShown(r *execRun, f func(*execRun) (float64, float64)) string {
	if r == nil {
		return "not measured"
	}
	if !r.measured() {
		return r.why()
	}
	a, b := f(r)
	return fmt.Sprintf("%s / %s", fmtMs2(a), fmtMs2(b))
}

// printExec prints the figures and targets on stderr.
func printExec(st *execStats) {
	progress("exec round trip (issues 22 and 34), %d interleaved samples each after %d warm-up rounds, in %s; load average %s at the start, %s at the end:",
		st.samples, st.warmups, st.took.Round(time.Second), st.loadStart, st.loadEnd)
	for _, r := range st.runs {
		if !r.measured() {
			fmt.Fprintf(os.Stderr, "  %-12s %s\n", r.sc.key, strings.ReplaceAll(r.why(), "**", ""))
			printFailures(r)
			continue
		}
		a0 := ""
		if len(r.ms[execA0]) > 0 {
			a0 = fmt.Sprintf("; A0 (empty workspace) median %s CPU %s", fmtMs2(r.med(execA0)), fmtMs2(r.cpuOf(execA0)))
		}
		fmt.Fprintf(os.Stderr, "  %-12s first %s; A median %s (p90 %s) CPU %s%s; B median %s (p90 %s) CPU %s; C median %s; A/B wall %s, CPU %s\n",
			r.sc.key, fmtMs2(r.first), fmtMs2(r.med(execA)), fmtMs2(r.p90(execA)), fmtMs2(r.cpuOf(execA)), a0,
			fmtMs2(r.med(execB)), fmtMs2(r.p90(execB)), fmtMs2(r.cpuOf(execB)), fmtMs2(r.med(execC)),
			fmtRatio(r.wallRatio()), fmtRatio(r.cpuRatio()))
		printFailures(r)
	}
	for _, t := range st.targets() {
		fmt.Fprintf(os.Stderr, "  target (issue %d) %s <= %s: %s (%s)\n", t.issue, t.what, t.fmtValue(t.limit), t.fmtValue(t.value), strings.Trim(t.status(), "*"))
	}
}

// printFailures prints r's error results by kind on stderr.
func printFailures(r *execRun) {
	if len(r.failures) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "  %-12s %d of harness's %d exec calls returned an error result, by kind:\n", "", len(r.failures), r.calls)
	for _, k := range failureKinds(r.failures) {
		fmt.Fprintf(os.Stderr, "  %-12s   %d× %s\n", "", k.n, k.msg)
	}
}

// renderExec renders the exec round trip's part of the generated section,
// its markers included; st nil or failed says so instead of figures.
func renderExec(st *execStats) string {
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("%s\n", execBeginMarker)
	pf("### Exec round trip (issues 22 and 34)\n\n")
	if st == nil || st.err != nil {
		why := "not measured"
		if st != nil {
			why = "not measured: " + st.err.Error()
		}
		pf("%s. `make bench-exec` measures it alone.\n%s\n", why, execEndMarker)
		return b.String()
	}
	pf("Measured %s on %d cores (Linux %s), load average (1 min) %s at the start and %s at the end (the machine is shared: ",
		st.date, runtime.NumCPU(), kernelRelease(), st.loadStart, st.loadEnd)
	pf("what else runs slows every contender of a round alike); per scenario a fresh `harness serve`, its session's ")
	pf("first `exec` timed (the *first call*), then %d untimed rounds and %d timed rounds, the contenders taking ", st.warmups, st.samples)
	pf("turns (A, B, C, A, B, C, ...; in every scenario but the empty workspace A, A0, B, C, A0 being the empty ")
	pf("workspace's server, kept running); the scenarios one after the other, in %s in all, ", st.took.Round(time.Second))
	pf("making the fixtures included. `make bench-exec` measures this part alone and rewrites only it ")
	pf("(`cd bench && go run . -harness ../bin/harness -only exec -out ../docs/benchmarks.md`; `-exec-big=false` leaves ")
	pf("out the million-entry workspace for a quick run).\n\n")

	pf("| scenario | entries | first call | harness wall (median) | harness CPU per call (server + children) | bare bwrap wall (median) | bare bwrap CPU per call | wall ratio | CPU ratio |\n")
	pf("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range st.runs {
		if !r.measured() {
			pf("| %s | %s | %s | – | – | – | – | – | – |\n", r.sc.name, r.entriesText(), r.why())
			continue
		}
		pf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.sc.name, r.entriesText(), fmtMs2(r.first),
			fmtMs2(r.med(execA)), fmtMs2(r.cpuOf(execA)), fmtMs2(r.med(execB)), fmtMs2(r.cpuOf(execB)),
			fmtRatio(r.wallRatio()), fmtRatio(r.cpuRatio()))
	}

	pf("\n| issue | target | at most | measured | status |\n|---|---|---|---|---|\n")
	for _, t := range st.targets() {
		measured := t.fmtValue(t.value)
		if t.shown != "" {
			measured += " (" + t.shown + ")"
		}
		pf("| %d | %s | %s | %s | %s |\n", t.issue, t.what, t.fmtValue(t.limit), measured, t.status())
	}

	pf("\n| scenario | harness wall p90 (min–max) | empty workspace's harness in the same rounds: wall median (CPU) | bare bwrap wall p90 (min–max) | `/bin/sh -c true` median (CPU) | server start | fixture made in | churn cycles/s (removals retried) | bare bwrap's arguments (operations left out) | load average | scenario took |\n")
	pf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range st.runs {
		if !r.measured() {
			pf("| %s | %s | – | – | – | – | – | – | – | – | – |\n", r.sc.name, r.why())
			continue
		}
		a0 := "–"
		if len(r.ms[execA0]) > 0 {
			a0 = fmt.Sprintf("%s (%s)", fmtMs2(r.med(execA0)), fmtMs2(r.cpuOf(execA0)))
		}
		made, churn := "–", "–"
		if r.made > 0 {
			made = r.made.Round(100 * time.Millisecond).String()
		}
		if r.sc.tempRoot {
			churn = fmt.Sprintf("%.0f (%d)", r.churn, r.churnBusy)
		}
		through := ""
		if r.joined {
			through = ", through nsenter"
		}
		pf("| %s | %s (%.2f–%.2f) | %s | %s (%.2f–%.2f) | %s (%s) | %s | %s | %s | %d (%d)%s | %s → %s | %s |\n", r.sc.name,
			fmtMs2(r.p90(execA)), r.lo(execA), r.hi(execA), a0, fmtMs2(r.p90(execB)), r.lo(execB), r.hi(execB),
			fmtMs2(r.med(execC)), fmtMs2(r.cpuOf(execC)), fmtMs2(float64(r.startup.Microseconds())/1e3), made, churn,
			r.bwrapN, r.bwrapDropped, through, r.loadA, r.loadZ, r.took.Round(100*time.Millisecond))
	}
	for _, r := range st.runs {
		if n := len(r.failures); n > 0 {
			pf("\n**%s: %d of harness's %d `exec` calls returned an error result**", r.sc.name, n, r.calls)
			if r.gaveUp != "" {
				pf(", %d in a row at the end, when the bench gave up on the scenario", maxConsecutiveFailures)
			} else {
				pf(" and were tried again (not counted as samples)")
			}
			pf(". By kind (numbers as N, long hexadecimal names as H):\n\n")
			for _, k := range failureKinds(r.failures) {
				pf("- %d× `%s`\n", k.n, strings.ReplaceAll(k.msg, "`", "'"))
			}
		}
	}

	pf("\nA: `harness serve --workspace WS --mode workspace-write --log-level warn` (default runner `sandbox`, ")
	pf("isolation `bwrap`; temp roots `/tmp` and `$TMPDIR`, in the temp-root scenarios `--temp-root T` alone; each ")
	pf("session's private temp area in the first temp root, except under `--shared-temp`; the environment's `HARNESS_*` ")
	pf("variables removed), WS a throwaway directory under `%s`; one go-sdk client session per server ", st.workspace)
	pf("over stdio; wall: from sending `tools/call` of `exec` with `{\"command\":\"true\"}` to decoding its answer, which ")
	pf("must say `exit code 0`. It covers the protected-path search of the writable roots, the command's cgroup, ")
	pf("`nsenter` into the session's network namespace, bwrap, ")
	pf("the inner stage (the small helper harness embeds, or the harness binary again: Landlock, seccomp, rlimits), `/bin/sh -c true`, the teardown and the ")
	if st.byCgroup() {
		pf("MCP round trip. CPU: what every task of the server's cgroup v1 cpuacct group used over the timed rounds, ")
		pf("per call (`cpuacct.usage`; the server is moved into a group of its own once started, and every process it ")
		pf("starts stays in it: bwrap, the sandbox's pid 1 that makes the mounts, the inner stage, the shell; harness ")
		pf("moves commands only in the memory and pids hierarchies). A process's rusage misses the sandbox's pid 1 and ")
		pf("what it reaped (it outlives the bwrap that started it and is reaped by init): about half of the CPU of ")
		pf("either A or B. It includes whatever else the server did meanwhile (under churn, reading the inotify ")
		pf("events). ")
	} else {
		pf("MCP round trip. CPU: the server's user and system time and that of every process it waited for (bwrap, the ")
		pf("inner stage, the shell), `utime + stime + cutime + cstime` of `/proc/PID/stat` (10 ms ticks) over the timed ")
		pf("rounds, per call (no cgroup v1 cpuacct hierarchy here: this misses the sandbox's pid 1, which outlives the ")
		pf("bwrap that started it and is reaped by init, and what it reaped: about half of A's and B's CPU); it includes ")
		pf("whatever else the server did meanwhile (under churn, reading the inotify events). ")
	}
	pf("The first call is sent as soon as `tools/list` has answered: in a large workspace the server's ")
	pf("warm-up search of it may still be running, and the first command waits for it.\n\n")
	pf("B: `%s` with the arguments harness's bwrap gets, recorded by one untimed `exec` of a second server of the ", st.bwrap)
	pf("same configuration on the same workspace (harness hands its bwrap the arguments on a descriptor, `--args FD`, ")
	pf("so that no command reads them from `/proc/1/cmdline`; that server's PATH starts with a recording bwrap, a copy ")
	pf("of the bench that saves them and execs the real one; the server runs until the scenario ends): the same ")
	pf("namespaces (`--unshare-user --disable-userns --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try`), ")
	pf("`--ro-bind / /`, `/dev`, `/proc`, `/dev/shm`, the binds of the workspace and of the temp area, ")
	pf("the read-only tmpfs reserving each missing protected name of the workspace, the deny-read masks; `--info-fd` ")
	pf("dropped, the data of `--ro-bind-data` read from `/dev/null`, the workspace swapped for an empty sibling ")
	pf("directory (a bind mount does not walk what it binds), `/bin/true` in place of harness's inner stage. In the ")
	pf("temp-root scenarios it leaves out what harness's bwrap did, at the probe, with the churn's entries (binds and ")
	pf("placeholders of the repositories its search found there, which come and go: a replay would fail or make ")
	pf("their mount points anew), so there B is a little cheaper than the sandbox harness builds call by call. The ")
	pf("mount points bwrap leaves in B's workspace are removed after each run, outside the timed part. The ")
	pf("network: harness makes one user and network namespace per session and starts each command's bwrap in it ")
	pf("through `nsenter` (so its bwrap has no `--unshare-net`); where the probe saw that (its command's network ")
	pf("namespace not the bench's; *through nsenter* in the last table), B does the same, started as `nsenter ")
	pf("--user --net --preserve-credentials -- bwrap ...` into a user and network namespace the bench made once per ")
	pf("scenario the same way (a bwrap with `--unshare-user --unshare-net` around a waiting shell). Started ")
	pf("with os/exec (empty environment, in `/`, its own process group), wall from `Start` to the end of `Wait`; ")
	if st.byCgroup() {
		pf("CPU: what the tasks of a cpuacct group of B's own used over the timed rounds, per run (each run is forked ")
		pf("from a bench thread that joins the group for the fork alone). C: `/bin/sh -c true`, the same way, in a ")
		pf("group of its own. p90 is the nearest-rank 90th percentile.\n\n")
	} else {
		pf("CPU: the user and system time the kernel reports for that one child when it is reaped (`wait4`'s rusage, ")
		pf("its own and its waited-for descendants'), per run. C: `/bin/sh -c true`, the same way. p90 is the ")
		pf("nearest-rank 90th percentile.\n\n")
	}
	pf("Scenarios: the workspaces of files are made with plain os calls under `%s` before their server starts ", st.workspace)
	pf("(synced), once per run, and removed at the end. The churned temp root is a directory of mode 1777 holding ")
	pf("%s directories of %s empty files (%s entries), made once for both scenarios that use it and passed as ",
		fmtInt(tempDirs), fmtInt(tempFiles), fmtInt(tempDirs*(tempFiles+1)))
	pf("`--temp-root` (harness's only temp root). While either of them runs (server start, first call, warm-ups, ")
	pf("samples) a goroutine of the bench churns it: in a loop it makes a repository-shaped directory ")
	pf("(`churn-N.git/` holding a `HEAD` file, `objects/` and `refs/`) and a file `churn-N.tmp`, removes the oldest ")
	pf("past %d of each (a removal that meets what harness is making in the entry is tried again on the next ", churnKeep)
	pf("cycles: the *removals retried* column), and pauses %s. By default each session gets a private temp area inside the temp root ", st.churnGap)
	pf("(a new 0700 directory, its `TMPDIR` and only writable temp area); with `--shared-temp` the temp root itself ")
	pf("is writable, and harness's protected-path search covers it.\n\n")
	pf("Targets: issue 34 wants, in the empty workspace, the wall time at most %.1fx bare bwrap's and the CPU at most ",
		execTargetWallRatio)
	pf("%.0fx; in every other scenario, harness's wall time and CPU at most %.1fx the empty workspace's; and the first ",
		execTargetCPURatio, execTargetScenario)
	pf("call at most %.0fx the median call. A scenario is compared with A0, the empty workspace's server taking its ", execTargetFirstRatio)
	pf("turn in the same rounds, so that the machine's drift between scenarios (the bare bwrap column shows how far ")
	pf("it moved) does not enter the ratio; A0's CPU is measured like A's, over the same rounds. Issue 22 wanted ")
	pf("harness's median at most %.0f ms and at most %.1fx bare bwrap's.\n", execTargetMedianMs, execTargetRatio)
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

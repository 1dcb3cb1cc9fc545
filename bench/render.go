package main

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// target is one goal of issue 15 at one concurrency: harness's calls/s over
// the reference's at least min (for wCreateFull: harness's creation rate
// into the full directory over its rate into the empty one).
type target struct {
	key  string   // harness series: keyHarness (durability full) or keyAtomic
	w    workload // wRead, wOverwrite, wEdit, or wCreateFull for the scaling of creation
	conc int
	min  float64
}

var targets = []target{
	{keyHarness, wOverwrite, maxConc, 1.5},
	{keyHarness, wOverwrite, 1, 1.0},
	{keyHarness, wEdit, maxConc, 2},
	{keyHarness, wEdit, 1, 1.2},
	{keyHarness, wRead, 1, 2},
	{keyAtomic, wOverwrite, 1, 1.5},
	{keyAtomic, wEdit, 1, 1.5},
	{keyHarness, wCreateFull, 1, 0.9},
	{keyHarness, wCreateFull, maxConc, 0.9},
}

// durabilityOf is the durability level of a harness series key.
func durabilityOf(key string) string {
	if key == keyAtomic {
		return durabilityAtomic
	}
	return durabilityFull
}

// what names what the target compares.
func (t target) what(r *results) string {
	if t.w == wCreateFull {
		return fmt.Sprintf("creation into %s entries / into an empty directory, harness", fmtInt(r.cfg.prefill))
	}
	return string(t.w) + ", harness / reference"
}

// value is the measured figure, NaN when not measured.
func (t target) value(r *results) float64 {
	if t.w == wCreateFull {
		return r.scaling(t.key, t.conc)
	}
	return r.ratioOf(point{t.w, t.conc}, t.key)
}

// ceiling is the highest value any server could show on this machine (NaN
// when there is no bound).
func (t target) ceiling(r *results) float64 {
	if t.w == wCreateFull {
		return math.NaN()
	}
	return r.ceiling(point{t.w, t.conc}, t.key)
}

// line is the target's one-line summary: the figure, met or missed.
func (t target) line(r *results) string {
	v := t.value(r)
	return fmt.Sprintf("%s, durability %s, c=%d >= %.2g: %.2f (%s)", t.what(r), durabilityOf(t.key), t.conc, t.min, v, strings.Trim(status(v, t.min), "*"))
}

// targetsAt lists the targets measured at point p, for the tables.
func targetsAt(r *results, p point) string {
	var out []string
	for _, t := range targets {
		if t.w == p.w && t.conc == p.conc && t.w != wCreateFull {
			out = append(out, fmt.Sprintf("%s >= %.2gx: %s", durabilityOf(t.key), t.min, status(t.value(r), t.min)))
		}
	}
	if len(out) == 0 {
		return "–"
	}
	return strings.Join(out, "; ")
}

// med is the median calls/s of series key at p (NaN when not measured).
func (r *results) med(p point, key string) float64 {
	v := r.byPoint[p][key]
	if len(v) == 0 {
		return math.NaN()
	}
	return median(v)
}

// cpuMed is the median server CPU time per call (µs) of server key at p.
func (r *results) cpuMed(p point, key string) float64 { return median(r.cpuByPoint[p][key]) }

// clientMed is the median client CPU time per call (µs) with server key at p.
func (r *results) clientMed(p point, key string) float64 { return median(r.clientByPoint[p][key]) }

// ratioOf is series key over the reference at p (ratio of the medians).
func (r *results) ratioOf(p point, key string) float64 { return r.med(p, key) / r.med(p, keyReference) }

// ceilingRate is the most calls/s any server could reach at p on this
// machine with this client, from the floor server (no SDK, no fsync) and,
// for overwrite and edit at durability full, the durable floor (no MCP): at
// concurrency 1 a call takes at least the durable floor's time plus the
// floor server's round trip; at higher concurrency, an optimistic bound,
// the smaller of the two rates. At durability atomic, which needs no fsync,
// it is the floor server's rate. NaN without floor figures.
func (r *results) ceilingRate(p point, key string) float64 {
	floor := r.med(p, keyFloor)
	if p.w == wRead || key == keyAtomic {
		return floor
	}
	durable := r.med(point{wOverwrite, p.conc}, "durable")
	if p.conc == 1 {
		return 1 / (1/durable + 1/floor)
	}
	return math.Min(durable, floor)
}

// ceiling is ceilingRate over the reference's rate: the highest ratio
// harness could show at p on this machine.
func (r *results) ceiling(p point, key string) float64 {
	return r.ceilingRate(p, key) / r.med(p, keyReference)
}

// runRatios are the per-run ratios of a over b: a and b measured in the
// same run, taking turns.
func runRatios(a, b []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range min(len(a), len(b)) {
		q := a[i] / b[i]
		lo, hi = min(lo, q), max(hi, q)
	}
	return lo, hi
}

// scaling is a server's creation rate into the full directory over its rate
// into the empty one.
func (r *results) scaling(key string, conc int) float64 {
	return r.med(point{wCreateFull, conc}, key) / r.med(point{wCreateEmpty, conc}, key)
}

func status(v, minimum float64) string {
	if v >= minimum {
		return "met"
	}
	return "**missed**"
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v)
}

// series are the contenders of a results table, in order: harness at both
// durability levels, then the reference.
var series = []string{keyHarness, keyAtomic, keyReference}

// renderSection renders the generated markdown section, markers included.
func renderSection(r *results) string {
	var b strings.Builder
	cfg := r.cfg
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	hasFloor := len(r.byPoint[point{wRead, 1}][keyFloor]) > 0
	c8 := maxConc

	pf("%s\n", beginMarker)
	pf("## Side by side with the reference MCP filesystem server\n\n")
	pf("<!-- Generated by `make bench` (bench/render.go): edit the generator, not this text. -->\n\n")
	pf("Command:\n\n```sh\nmake bench\n```\n\n")
	pf("It builds `bin/harness`, runs `cd bench && go run . -harness ../bin/harness -out ../docs/benchmarks.md ")
	pf("-chart ../docs/bench-calls.svg` (the `bench/` module: it installs the pinned reference server with npm, ")
	pf("drives harness at both durability levels and the reference and rewrites this section, between the ")
	pf("`bench:begin`/`bench:end` markers, and the chart; it also measures the exec round trip of issues 22 and 34, last in ")
	pf("this section), then runs the in-process benchmarks of the sections below into `bench.out`.\n\n")
	pf("Machine: %s. Load average (1 min) %s at the start and %s at the end: the machine is shared, and ",
		r.machine.line(), r.machine.load, r.loadEnd)
	pf("other work running at the same time slows every server. %d runs (creation: the first %d); the ", cfg.runs, cfg.createRuns)
	pf("measurements took %s.\n\n", r.elapsed.Round(time.Second))

	pf("**Two durability levels.** Harness runs twice side by side: *full* (`--durability full`, the default: ")
	pf("a write returns once the new file and its directory are fsynced) and *atomic* (`--durability atomic`: ")
	pf("the same atomic publication without fsync, which survives a crash of the process but not of the ")
	pf("machine). **The reference does less work per call.** It never fsyncs, neither the file nor its directory: a write is ")
	pf("acknowledged from the page cache, and a crash can lose it. It creates a new file in place (`open` with ")
	pf("`O_EXCL`, then write; no temp file), so a crash or an error mid-write leaves a partial file. It replaces an ")
	pf("existing file through a temp file beside it and `rename` (atomic, not durable). ")
	pf("It has no read-before-write check and no version check, so it overwrites changes made behind ")
	pf("its back without noticing, and it does not serialize the calls on one file. Its write result is one line of ")
	pf("text; harness's write and edit results carry more (see the result sizes below), which the client has to ")
	pf("decode. Harness, on every write and edit, checks the version the connection read, resolves the path ")
	pf("beneath the workspace with `openat2(RESOLVE_BENEATH)` and publishes the new content atomically; at ")
	pf("durability full it also fsyncs the file and the parent directory.\n\n")

	pf("### Targets\n\n")
	if hasFloor {
		pf("| target | durability | concurrency | at least | measured | ceiling on this machine | status |\n|---|---|---|---|---|---|---|\n")
	} else {
		pf("| target | durability | concurrency | at least | measured | status |\n|---|---|---|---|---|---|\n")
	}
	for _, t := range targets {
		v := t.value(r)
		st := status(v, t.min)
		ceil := t.ceiling(r)
		if v < t.min && ceil < t.min {
			st += " (out of reach here)"
		}
		if hasFloor {
			pf("| %s | %s | %d | %.2gx | %s | %s | %s |\n", t.what(r), durabilityOf(t.key), t.conc, t.min, fmtRatio(v), fmtRatio(ceil), st)
		} else {
			pf("| %s | %s | %d | %.2gx | %s | %s |\n", t.what(r), durabilityOf(t.key), t.conc, t.min, fmtRatio(v), st)
		}
	}
	pf("\n")
	if hasFloor {
		pf("The ceiling is the highest ratio any server could show on this machine with this client: the rate of the ")
		pf("*floor server* (a hand-written JSON-RPC loop in `bench/floor.go`, no SDK, one plain os call per tool ")
		pf("call, no fsync) over the reference's; for overwrite and edit at durability full, which must be durable, ")
		pf("at concurrency 1 a call takes at least the *durable floor* (an overwrite with plain os calls and no MCP: ")
		pf("temp file beside the target, write, fsync, rename, directory fsync) plus the floor server's round trip, ")
		pf("and at concurrency %d the smaller of the two rates (an optimistic bound). A target above its ceiling ", c8)
		pf("is out of reach here whatever harness does.\n\n")
	}

	r.renderStartup(pf)

	cpuCell := func(p point) string {
		var cells []string
		for _, k := range series {
			cells = append(cells, fmtMicros(r.cpuMed(p, k))+" + "+fmtMicros(r.clientMed(p, k)))
		}
		return strings.Join(cells, " / ")
	}
	floorHead, floorSep := "", ""
	if hasFloor {
		floorHead, floorSep = " floor calls/s |", "---|"
	}
	ratioCell := func(p point, key string) string {
		lo, hi := runRatios(r.byPoint[p][key], r.byPoint[p][keyReference])
		return fmt.Sprintf("%s (%.2f–%.2f)", fmtRatio(r.ratioOf(p, key)), lo, hi)
	}
	floorCell := func(p point) string {
		if !hasFloor {
			return ""
		}
		return " " + fmtRate(r.med(p, keyFloor)) + " |"
	}
	table := func(title string, w workload) {
		pf("### %s\n\n", title)
		if hb, rb := r.resultBytes[point{w, 1}][keyHarness], r.resultBytes[point{w, 1}][keyReference]; hb > 0 && rb > 0 {
			pf("One result, JSON encoded: harness %s bytes, reference %s bytes.\n\n", fmtInt(int(hb)), fmtInt(int(rb)))
		}
		pf("| concurrency | harness full calls/s | harness atomic calls/s | reference calls/s | full / reference | atomic / reference | targets |%s CPU per call, server + client: full / atomic / reference |\n", floorHead)
		pf("|---|---|---|---|---|---|---|%s---|\n", floorSep)
		for _, c := range concurrencies {
			p := point{w, c}
			pf("| %d | %s | %s | %s | %s | %s | %s |%s %s |\n", c, fmtRate(r.med(p, keyHarness)), fmtRate(r.med(p, keyAtomic)), fmtRate(r.med(p, keyReference)),
				ratioCell(p, keyHarness), ratioCell(p, keyAtomic), targetsAt(r, p), floorCell(p), cpuCell(p))
		}
		pf("\n")
	}
	table(fmt.Sprintf("Read of a %s file (`read` / `read_text_file`)", fmtSize(cfg.fileSize)), wRead)
	table(fmt.Sprintf("Overwrite of a %s file (`write` / `write_file`)", fmtSize(cfg.fileSize)), wOverwrite)
	if d1, d8 := r.med(point{wOverwrite, 1}, "durable"), r.med(point{wOverwrite, c8}, "durable"); !math.IsNaN(d1) {
		pf("Durable floor, in-process with no MCP: %s overwrites/s at concurrency 1 (%s µs each, of which %s µs of CPU), %s at concurrency %d.\n\n",
			fmtRate(d1), fmt.Sprintf("%.0f", 1e6/d1), fmt.Sprintf("%.0f", r.clientMed(point{wOverwrite, 1}, "durable")), fmtRate(d8), c8)
	}
	table(fmt.Sprintf("One-line edit of a %s file (`edit` / `edit_file`)", fmtSize(cfg.fileSize)), wEdit)

	pf("### Creating %s new files in one directory (`write` / `write_file`)\n\n", fmtInt(cfg.creates))
	pf("| concurrency | directory before | harness full files/s | harness atomic files/s | reference files/s | full / reference | atomic / reference |%s CPU per file, server + client: full / atomic / reference |\n", strings.ReplaceAll(floorHead, "calls/s", "files/s"))
	pf("|---|---|---|---|---|---|---|%s---|\n", floorSep)
	for _, c := range concurrencies {
		for _, w := range []workload{wCreateEmpty, wCreateFull} {
			p := point{w, c}
			dir := "empty"
			if w == wCreateFull {
				dir = fmtInt(cfg.prefill) + " entries"
			}
			pf("| %d | %s | %s | %s | %s | %s | %s |%s %s |\n", c, dir, fmtRate(r.med(p, keyHarness)), fmtRate(r.med(p, keyAtomic)), fmtRate(r.med(p, keyReference)),
				ratioCell(p, keyHarness), ratioCell(p, keyAtomic), floorCell(p), cpuCell(p))
		}
	}
	pf("\nScaling with the directory's size, files/s into %s entries over files/s into an empty directory ", fmtInt(cfg.prefill))
	pf("(target for harness at durability full: at least 0.9). The reference slows down because on every new file it lists the whole ")
	pf("directory (its path validation looks for a Unicode-equivalent existing name when the path does not exist).\n\n")
	pf("| concurrency | harness full | harness atomic | reference | target 0.9 (harness full) |\n|---|---|---|---|---|\n")
	scalingCell := func(key string, c int) string {
		lo, hi := runRatios(r.byPoint[point{wCreateFull, c}][key], r.byPoint[point{wCreateEmpty, c}][key])
		return fmt.Sprintf("%.2f (%.2f–%.2f)", r.scaling(key, c), lo, hi)
	}
	for _, c := range concurrencies {
		pf("| %d | %s | %s | %s | %s |\n", c, scalingCell(keyHarness, c), scalingCell(keyAtomic, c), scalingCell(keyReference, c), status(r.scaling(keyHarness, c), 0.9))
	}
	pf("\n")
	if cfg.chart != "" {
		rel := cfg.chart
		if cfg.out != "" {
			if p, err := filepath.Rel(filepath.Dir(absOr(cfg.out)), absOr(cfg.chart)); err == nil {
				rel = p
			}
		}
		pf("![calls/s of harness at both durability levels and the reference server per workload, medians of the runs](%s)\n\n", filepath.ToSlash(rel))
	}

	pf("**Contenders.** Ours: `harness serve --workspace DIR --mode workspace-write --temp-root DIR --durability LEVEL --log-level warn` ")
	pf("with LEVEL `full` and `atomic`, two series (default composition: sandbox backend, read-before-write policy; ")
	pf("the environment's `HARNESS_*` variables removed). The reference: `%s` %s ", referencePackage, referenceVersion)
	pf("(Node; every npm package pinned by `bench/reference/package-lock.json`), started as `node dist/index.js DIR`. ")
	pf("One Go client, the official go-sdk v1.8.0 with `mcp.CommandTransport` (no roots capability), drives all over ")
	pf("stdio with the same code and the go-sdk's default protocol negotiation: harness settles on MCP %s, the ", r.protocols[keyHarness])
	pf("reference on %s, the newest its SDK speaks (with %s every request also carries the `_meta` triple of ", r.protocols[keyReference], r.protocols[keyHarness])
	pf("protocol version, client info and capabilities, which the server validates). Each run starts every server, ")
	pf("each on a fresh directory under the same temp dir, so the same disk.\n\n")

	pf("**Method.** Concurrency %d is %d goroutines sharing one client session, each awaiting its call before the ", c8, c8)
	pf("next; each goroutine overwrites and edits its own file, reads share one file, creations share one directory. ")
	pf("Read, overwrite and edit: %s of untimed calls per server, then %d slices of %s per server, the servers ",
		fmtDur(cfg.warmup), cfg.slices, fmtDur(cfg.duration/time.Duration(cfg.slices)))
	pf("taking turns slice by slice (the order reversing from slice to slice), so that all meet the same disk and CPU weather; calls/s ")
	pf("is the calls completed over the time spent in the slices. Creation: per server, %s new %s files ",
		fmtInt(cfg.creates), fmtSize(cfg.fileSize))
	pf("(`write` / `write_file`) into a fresh empty directory and %s into a fresh directory already holding %s ",
		fmtInt(cfg.creates), fmtInt(cfg.prefill))
	pf("files (made with plain os calls, untimed), in chunks of %d files, the directories taking turns chunk by ", cfg.chunk)
	pf("chunk in rotating order. The disk is synced (`sync(2)`) before each slice and chunk, outside the timed part, so ")
	pf("no server pays for writing back what the setup or another server left unsynced. Before the runs each server ")
	pf("reads every target once (untimed): harness refuses to overwrite or edit a file the connection has not read ")
	pf("(`FS_NOT_OBSERVED`), and after each write it knows the new version, so the timed calls need no re-read. ")
	pf("Figures are medians of the runs, each with fresh servers and directories; a ratio is a harness series over ")
	pf("the reference of the medians, with the range of the per-run ratios in parentheses. ")
	if journal, ok := ext4Journal(r.machine.tempDir); ok && !journal {
		pf("The work directories are removed only at the end: on ext4 without a journal each new inode costs a scan ")
		pf("past the inodes freed in the last 30–35 s in its block group, so removing thousands of files between ")
		pf("measurements would slow every create, overwrite and edit after it (measured on this machine: 0.9 ms of ")
		pf("CPU per new file for about 15 s after removing 40,000 files, against 0.06–0.1 ms otherwise). ")
	}
	pf("CPU per call: the server process's user and system time in the timed part (`/proc/PID/stat`, all threads, ")
	pf("10 ms ticks) and the bench process's own (`getrusage`: the client, which is the same code for every server ")
	pf("but decodes their different responses), over the calls, medians of the runs. Client and server share the ")
	pf("machine's cores, so at concurrency %d every server is bound by the CPU it uses together with the client.\n\n", c8)
	pf("Every run's figures are printed on stderr by `make bench`.\n")
	if r.exec != nil {
		// Last, where `-only exec -out` puts it when the section has none.
		pf("\n%s\n", renderExec(r.exec))
	}
	pf("%s\n", endMarker)
	return b.String()
}

// renderStartup renders the cold start and memory table.
func (r *results) renderStartup(pf func(format string, args ...any)) {
	n := len(r.startup[keyHarness].walls())
	if n == 0 {
		return
	}
	pf("### Cold start and memory\n\n")
	pf("| figure | harness full | harness atomic | reference | reference / harness full |\n|---|---|---|---|---|\n")
	row := func(name string, cell func(key string) string, value func(key string) float64) {
		pf("| %s | %s | %s | %s | %s |\n", name, cell(keyHarness), cell(keyAtomic), cell(keyReference), fmtRatio(value(keyReference)/value(keyHarness)))
	}
	row(fmt.Sprintf("cold start: spawn to the answer of `tools/list`, median of %d (range)", n),
		func(k string) string {
			w := r.startup[k].walls()
			if len(w) == 0 {
				return "–"
			}
			return fmt.Sprintf("%s (%.1f–%.1f)", fmtMs(median(w)), slices.Min(w), slices.Max(w))
		},
		func(k string) float64 { return median(r.startup[k].walls()) })
	row(fmt.Sprintf("idle memory: resident set after `tools/list`, median of %d", n),
		func(k string) string { return fmtMB(median(r.startup[k].idles())) },
		func(k string) float64 { return median(r.startup[k].idles()) })
	row(fmt.Sprintf("peak memory: resident high-water mark over a run, median of %d runs (largest)", r.cfg.runs),
		func(k string) string {
			v := r.peakRSS[k]
			if len(v) == 0 {
				return "–"
			}
			return fmt.Sprintf("%s (%s)", fmtMB(median(v)), fmtMB(slices.Max(v)))
		},
		func(k string) float64 { return median(r.peakRSS[k]) })
	pf("\nCold start: the wall time from spawning the server process to the answer of its `tools/list`, the ")
	pf("go-sdk client's `initialize`, `notifications/initialized` and `tools/list` (the client is the same Go ")
	pf("code for every server), %d spawns per server after one untimed spawn each, the servers taking turns, ", n)
	pf("before the runs. Memory is read from the server process itself (checked to run the executable started, ")
	pf("`harness` or `node`, not a wrapper): idle is `VmRSS` of `/proc/PID/status` right after that answer; ")
	pf("peak is `VmHWM` just before each run's session closes, so it covers every workload of the run (the ")
	pf("creation runs included: the first %d). MB is 10^6 bytes.\n\n", r.cfg.createRuns)
}

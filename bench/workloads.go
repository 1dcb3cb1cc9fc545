package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// workload names one measured operation.
type workload string

const (
	wRead        workload = "read"
	wOverwrite   workload = "overwrite"
	wEdit        workload = "edit"
	wCreateEmpty workload = "create-empty" // new files into an empty directory
	wCreateFull  workload = "create-full"  // new files into a directory that already holds -prefill entries
)

// maxConc is the highest concurrency: the fixtures hold one target file per
// goroutine up to it.
const maxConc = 8

// concurrencies are the measured concurrencies: goroutines sharing one
// client session, each awaiting its call before the next.
var concurrencies = []int{1, maxConc}

// point is one measurement: a workload at a concurrency.
type point struct {
	w    workload
	conc int
}

func (p point) String() string { return fmt.Sprintf("%s c=%d", p.w, p.conc) }

// points are the measurements of a run, in order; only, when not empty,
// keeps the workloads it lists (comma-separated).
func points(only string) []point {
	var out []point
	for _, w := range []workload{wRead, wOverwrite, wEdit} {
		for _, c := range concurrencies {
			out = append(out, point{w, c})
		}
	}
	for _, c := range concurrencies {
		out = append(out, point{wCreateEmpty, c}, point{wCreateFull, c})
	}
	if only != "" {
		keep := strings.Split(only, ",")
		out = slices.DeleteFunc(out, func(p point) bool { return !slices.Contains(keep, string(p.w)) })
	}
	return out
}

// results holds calls/s of every run, byPoint[p][server key][run], and the
// server process's CPU time per call, cpuByPoint[p][server key][run] (µs).
type results struct {
	specs      []serverSpec
	points     []point
	byPoint    map[point]map[string][]float64
	cpuByPoint map[point]map[string][]float64
	// clientByPoint is the bench process's (the client's) CPU time per
	// call, µs.
	clientByPoint map[point]map[string][]float64
	// resultBytes is the size of one result, JSON encoded, by point and
	// server key (read, overwrite and edit).
	resultBytes map[point]map[string]int64
	protocols   map[string]string // negotiated protocol version by server key
	// startup holds the cold starts and idle resident sets by server key.
	startup map[string]*startupStats
	// peakRSS is each server process's resident high-water mark at the end
	// of each run, bytes, by server key.
	peakRSS map[string][]float64
	loadEnd string // load average after the measurements
	// exec is the exec round trip (execrt.go), nil when not measured.
	exec    *execStats
	machine machine
	cfg     config
	elapsed time.Duration // measurement time, npm install excluded
}

// fixture is the state of one server's directory during a run.
type fixture struct {
	readPath   string
	writePaths [maxConc]string
	editPaths  [maxConc]string
	writeSeq   [maxConc]int // next overwrite version of each goroutine's file
	lastWrite  [maxConc]string
	editSeq    [maxConc]int // current counter of each goroutine's edit file
}

// measureAll runs every point on each server, cfg.runs times (creation
// points cfg.createRuns times). Each run starts every server on fresh
// directories; within a run the points are measured in order, and for each
// point the servers are interleaved in slices (chunks for creation) whose
// order alternates, so all meet the same disk and CPU weather. Before the
// runs it measures the cold starts (measureColdStarts); each run records
// each server's peak resident set as its session closes.
func measureAll(ctx context.Context, cfg config, root string, specs []serverSpec) (*results, error) {
	res := &results{specs: specs, points: points(cfg.only), byPoint: map[point]map[string][]float64{}, cpuByPoint: map[point]map[string][]float64{}, clientByPoint: map[point]map[string][]float64{}, resultBytes: map[point]map[string]int64{}, protocols: map[string]string{}, peakRSS: map[string][]float64{}}
	for _, p := range res.points {
		res.byPoint[p] = map[string][]float64{}
		res.cpuByPoint[p] = map[string][]float64{}
		res.clientByPoint[p] = map[string][]float64{}
		res.resultBytes[p] = map[string]int64{}
	}
	began := time.Now()
	var err error
	if res.startup, err = measureColdStarts(ctx, cfg, root, specs, cfg.coldStarts); err != nil {
		return nil, fmt.Errorf("cold start: %w", err)
	}
	for run := range cfg.runs {
		if err := measureRun(ctx, cfg, root, specs, run, res); err != nil {
			return nil, err
		}
	}
	res.elapsed = time.Since(began)
	res.loadEnd = loadAverage()
	return res, nil
}

func measureRun(ctx context.Context, cfg config, root string, specs []serverSpec, run int, res *results) error {
	servers := make([]*server, len(specs))
	fixtures := make([]*fixture, len(specs))
	defer func() {
		for _, s := range servers {
			if s != nil {
				if peak := s.peakRSS(); peak > 0 {
					res.peakRSS[s.spec.key] = append(res.peakRSS[s.spec.key], float64(peak))
					progress("run %d/%d  %-14s peak RSS %s", run+1, cfg.runs, s.spec.key, fmtMB(float64(peak)))
				}
				if cfg.profile != "" && s.spec.isHarness() {
					path := profilePath(cfg, run, s.spec.key)
					if err := stopProfile(s, path); err != nil {
						progress("profile: %v", err)
					} else {
						progress("profile: wrote %s and %s.allocs, covering %d tool calls", path, path, s.calls.Load())
					}
				}
				if cfg.only != "" || cfg.servers != "" {
					progress("%s: %d tool calls in this run", s.spec.key, s.calls.Load())
				}
				// The directory stays until the end (see removeWork).
				if err := s.close(); err != nil {
					progress("closing %s: %v", s.spec.key, err)
				}
			}
		}
	}()
	for i, spec := range specs {
		dir := filepath.Join(root, fmt.Sprintf("run%d-%s", run+1, spec.key))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		fx, err := makeFixture(dir, cfg.fileSize)
		if err != nil {
			return err
		}
		var env []string
		if cfg.harnessEnv != "" && spec.isHarness() {
			env = append(env, strings.Split(cfg.harnessEnv, ",")...)
		}
		if cfg.profile != "" && spec.isHarness() {
			env = append(env, "BENCH_CPUPROFILE="+profilePath(cfg, run, spec.key))
		}
		s, err := startServer(ctx, spec, dir, cfg.protocol, false, env...)
		if err != nil {
			return err
		}
		servers[i], fixtures[i] = s, fx
		res.protocols[spec.key] = s.proto
		if err := setup(ctx, s, fx); err != nil {
			return err
		}
	}
	for pi, p := range res.points {
		flip := (run+pi)%2 == 1
		var got map[point][]sample // per point, one sample per server
		var err error
		switch p.w {
		case wRead, wOverwrite, wEdit:
			var extra []*inProcess
			if cfg.floor && p.w == wOverwrite {
				df, derr := durableFloor(filepath.Join(root, fmt.Sprintf("run%d-durable", run+1)), cfg.fileSize)
				if derr != nil {
					return derr
				}
				extra = append(extra, df)
			}
			var smp []sample
			smp, err = measureTimed(ctx, cfg, servers, fixtures, p, flip, extra...)
			got = map[point][]sample{p: smp}
		case wCreateEmpty, wCreateFull:
			if run >= cfg.createRuns || (p.w == wCreateFull && slices.Contains(res.points, point{wCreateEmpty, p.conc})) {
				continue // the full directory is measured with the empty one
			}
			got, err = measureCreate(ctx, cfg, servers, p.conc, flip)
		}
		if err != nil {
			return fmt.Errorf("run %d, %s: %w", run+1, p, err)
		}
		for _, q := range res.points {
			smp, ok := got[q]
			if !ok {
				continue
			}
			for i, v := range smp {
				k := "durable" // the in-process series after the servers
				if i < len(specs) {
					k = specs[i].key
				}
				res.byPoint[q][k] = append(res.byPoint[q][k], v.rate)
				res.cpuByPoint[q][k] = append(res.cpuByPoint[q][k], v.cpuPerCall)
				res.clientByPoint[q][k] = append(res.clientByPoint[q][k], v.clientCPU)
				if v.resultBytes > 0 {
					res.resultBytes[q][k] = v.resultBytes
				}
				progress("run %d/%d  %-16s %-14s %7.0f calls/s  CPU per call: server %5.0f µs, client %4.0f µs", run+1, cfg.runs, q, k, v.rate, v.cpuPerCall, v.clientCPU)
			}
		}
	}
	return nil
}

// makeFixture writes the target files into dir with plain os calls.
func makeFixture(dir string, size int) (*fixture, error) {
	fx := &fixture{readPath: filepath.Join(dir, "read.txt")}
	if err := os.WriteFile(fx.readPath, []byte(fileContent("read", 0, size)), 0o644); err != nil {
		return nil, err
	}
	for w := range maxConc {
		fx.writePaths[w] = filepath.Join(dir, fmt.Sprintf("overwrite-%d.txt", w))
		fx.lastWrite[w] = fileContent("overwrite", 0, size)
		fx.writeSeq[w] = 1
		if err := os.WriteFile(fx.writePaths[w], []byte(fx.lastWrite[w]), 0o644); err != nil {
			return nil, err
		}
		fx.editPaths[w] = filepath.Join(dir, fmt.Sprintf("edit-%d.txt", w))
		if err := os.WriteFile(fx.editPaths[w], []byte(editContent(0, size)), 0o644); err != nil {
			return nil, err
		}
	}
	return fx, nil
}

// setup reads every target once through the server (untimed): harness's
// read-before-write policy wants a read of a file in the same connection
// before it is overwritten or edited. The reference needs none; it gets the
// same calls so that all run the same client code.
func setup(ctx context.Context, s *server, fx *fixture) error {
	res, err := s.call(ctx, s.spec.read(fx.readPath))
	if err != nil {
		return err
	}
	if !strings.Contains(resultText(res), "read version 0000000000") {
		return fmt.Errorf("%s: read of %s returned unexpected text %q", s.spec.key, fx.readPath, resultText(res))
	}
	for w := range maxConc {
		for _, p := range []string{fx.writePaths[w], fx.editPaths[w]} {
			if _, err := s.call(ctx, s.spec.read(p)); err != nil {
				return err
			}
		}
	}
	return nil
}

func profilePath(cfg config, run int, key string) string {
	return filepath.Join(cfg.profile, fmt.Sprintf("%s-run%d.pprof", key, run+1))
}

// sample is one measurement: calls per second, and the server process's CPU
// time per call in µs (0 when unknown).
type sample struct {
	rate       float64
	cpuPerCall float64
	clientCPU  float64 // the bench process's own CPU time per call, µs
	// resultBytes is the size of one call's result, JSON encoded (0 when
	// not recorded).
	resultBytes int64
}

// tally accumulates the slices of one server's measurement.
type tally struct {
	calls     int64
	elapsed   time.Duration
	cpu       time.Duration
	cpuOK     bool
	clientCPU time.Duration
}

// run times one slice of calls on s: sync the disk, then call slice, which
// returns the calls it completed.
func (t *tally) run(s *server, slice func() (int64, error)) error {
	syncDisk()
	cpu0, self0 := s.cpu(), selfCPU()
	start := time.Now()
	n, err := slice()
	if err != nil {
		return err
	}
	t.elapsed += time.Since(start)
	t.clientCPU += selfCPU() - self0
	t.calls += n
	if cpu1 := s.cpu(); cpu0 >= 0 && cpu1 >= 0 {
		t.cpu += cpu1 - cpu0
		t.cpuOK = true
	}
	return nil
}

func (t *tally) sample() sample {
	smp := sample{rate: float64(t.calls) / t.elapsed.Seconds()}
	if t.calls > 0 {
		smp.clientCPU = float64(t.clientCPU.Microseconds()) / float64(t.calls)
	}
	if t.cpuOK && t.calls > 0 {
		smp.cpuPerCall = float64(t.cpu.Microseconds()) / float64(t.calls)
	}
	return smp
}

// order returns the server indices 0..n-1, reversed when flip.
func order(n int, flip bool) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	if flip {
		slices.Reverse(out)
	}
	return out
}

// measureTimed measures a read, overwrite or edit point on every server:
// cfg.warmup of untimed calls each, then cfg.slices slices of
// cfg.duration/cfg.slices per server, the servers taking turns (the first of
// each slice alternating). It returns one sample per server.
//
// extra are measured the same way, taking turns with the servers after
// them: in-process series (the durable floor) with no server process.
func measureTimed(ctx context.Context, cfg config, servers []*server, fixtures []*fixture, p point, flip bool, extra ...*inProcess) ([]sample, error) {
	n := len(servers) + len(extra)
	ops := make([]func(ctx context.Context, w int) error, n)
	for i, s := range servers {
		ops[i] = timedOp(cfg, s, fixtures[i], p.w)
	}
	for j, e := range extra {
		ops[len(servers)+j] = e.op
	}
	srv := func(i int) *server {
		if i < len(servers) {
			return servers[i]
		}
		return nil
	}
	for i := range n {
		if cfg.warmup > 0 {
			syncDisk()
			if _, err := loop(ctx, p.conc, cfg.warmup, ops[i]); err != nil {
				return nil, err
			}
		}
	}
	tallies := make([]tally, n)
	for k := range cfg.slices {
		for _, i := range order(n, flip != (k%2 == 1)) {
			err := tallies[i].run(srv(i), func() (int64, error) {
				return loop(ctx, p.conc, cfg.duration/time.Duration(cfg.slices), ops[i])
			})
			if err != nil {
				return nil, err
			}
		}
	}
	out := make([]sample, n)
	for i, s := range servers {
		// One more call, untimed, to record the size of a result.
		s.capture.Store(true)
		if err := ops[i](ctx, 0); err != nil {
			return nil, err
		}
		if err := verify(cfg, s, fixtures[i], p); err != nil {
			return nil, err
		}
		out[i] = tallies[i].sample()
		out[i].resultBytes = s.captured.Load()
	}
	for j := range extra {
		out[len(servers)+j] = tallies[len(servers)+j].sample()
	}
	return out, nil
}

// inProcess is a series measured without MCP, in this process.
type inProcess struct {
	key string
	op  func(ctx context.Context, w int) error
}

// durableFloor returns the durable floor of an overwrite, in dir: per
// goroutine, one 1 KiB file replaced by a temp file beside it (exclusive
// create, write, fsync, close, rename, fsync of the directory) with plain
// os calls, no MCP: what a durable, atomic overwrite costs on this disk at
// the least.
func durableFloor(dir string, size int) (*inProcess, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	var seq [maxConc]int
	return &inProcess{key: "durable", op: func(_ context.Context, w int) error {
		seq[w]++
		tmp := filepath.Join(dir, fmt.Sprintf(".durable-%d.tmp", w))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.WriteString(fileContent("durable", seq[w], size))
		serr := f.Sync()
		if err := errors.Join(werr, serr, f.Close()); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("durable-%d.txt", w))); err != nil {
			return err
		}
		return d.Sync()
	}}, nil
}

// timedOp is the call goroutine w makes, again and again, for workload w.
func timedOp(cfg config, s *server, fx *fixture, wl workload) func(ctx context.Context, w int) error {
	switch wl {
	case wRead:
		return func(ctx context.Context, _ int) error {
			_, err := s.call(ctx, s.spec.read(fx.readPath))
			return err
		}
	case wOverwrite:
		return func(ctx context.Context, w int) error {
			content := fileContent("overwrite", fx.writeSeq[w], cfg.fileSize)
			if _, err := s.call(ctx, s.spec.write(fx.writePaths[w], content)); err != nil {
				return err
			}
			fx.writeSeq[w]++
			fx.lastWrite[w] = content
			return nil
		}
	default: // wEdit
		return func(ctx context.Context, w int) error {
			k := fx.editSeq[w]
			if _, err := s.call(ctx, s.spec.edit(fx.editPaths[w], counterLine(k), counterLine(k+1))); err != nil {
				return err
			}
			fx.editSeq[w] = k + 1
			return nil
		}
	}
}

var errMismatch = errors.New("content differs")

// verify checks, after an overwrite or edit point, that each goroutine's
// file holds what it last wrote.
func verify(cfg config, s *server, fx *fixture, p point) error {
	for w := range p.conc {
		var path, want string
		switch p.w {
		case wOverwrite:
			path, want = fx.writePaths[w], fx.lastWrite[w]
		case wEdit:
			path, want = fx.editPaths[w], editContent(fx.editSeq[w], cfg.fileSize)
		default:
			return nil
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			return fmt.Errorf("%s: %s does not hold the last content written: %w", s.spec.key, path, errors.Join(err, errMismatch))
		}
	}
	return nil
}

// measureCreate measures creation on every server at concurrency conc: per
// server, one fresh empty directory and one already holding cfg.prefill
// files (made with os calls, untimed). The cfg.creates new files of each
// directory are created in chunks of cfg.chunk; the chunks of the
// 2 x servers directories take turns, their order rotating from chunk to
// chunk, so that all meet the same weather. It returns a sample per server
// for wCreateEmpty and for wCreateFull.
func measureCreate(ctx context.Context, cfg config, servers []*server, conc int, flip bool) (map[point][]sample, error) {
	type series struct {
		srv     int
		w       workload
		dir     string
		prefill int
		t       tally
	}
	var all []*series
	for i, s := range servers {
		for _, w := range []workload{wCreateEmpty, wCreateFull} {
			se := &series{srv: i, w: w, dir: filepath.Join(s.dir, fmt.Sprintf("%s-c%d", w, conc))}
			if w == wCreateFull {
				se.prefill = cfg.prefill
			}
			if err := os.Mkdir(se.dir, 0o755); err != nil {
				return nil, err
			}
			if err := fillDir(se.dir, se.prefill); err != nil {
				return nil, err
			}
			all = append(all, se)
		}
	}
	content := fileContent("create", 0, cfg.fileSize)
	for k, lo := 0, 0; lo < cfg.creates; k, lo = k+1, lo+cfg.chunk {
		hi := min(lo+cfg.chunk, cfg.creates)
		turn := append(slices.Clone(all[k%len(all):]), all[:k%len(all)]...)
		if flip != (k%2 == 1) {
			slices.Reverse(turn)
		}
		for _, se := range turn {
			s := servers[se.srv]
			err := se.t.run(s, func() (int64, error) {
				return countRange(ctx, conc, lo, hi, func(ctx context.Context, i int) error {
					_, err := s.call(ctx, s.spec.write(filepath.Join(se.dir, fmt.Sprintf("new-%05d.txt", i)), content))
					return err
				})
			})
			if err != nil {
				return nil, err
			}
		}
	}
	out := map[point][]sample{}
	for _, se := range all {
		entries, err := os.ReadDir(se.dir)
		if err != nil {
			return nil, err
		}
		if len(entries) != se.prefill+cfg.creates {
			return nil, fmt.Errorf("%s: %s holds %d entries after the creation, want %d", servers[se.srv].spec.key, se.dir, len(entries), se.prefill+cfg.creates)
		}
		p := point{se.w, conc}
		if out[p] == nil {
			out[p] = make([]sample, len(servers))
		}
		out[p][se.srv] = se.t.sample()
	}
	return out, nil
}

// fillDir creates n small files in dir with plain os calls.
func fillDir(dir string, n int) error {
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("old-%05d.txt", i)), fmt.Appendf(nil, "old file %d\n", i), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// syncDisk flushes what was written outside the timed part (fixtures,
// prefilled and removed directories, the other server's unsynced writes and
// their journal commit), so that no timed part pays for it.
func syncDisk() { syscall.Sync() }

// loop runs op on conc goroutines for dur and returns the calls completed.
// Each goroutine awaits its call before the next; the loop ends when every
// goroutine has finished the call it had in flight at the deadline.
func loop(ctx context.Context, conc int, dur time.Duration, op func(ctx context.Context, w int) error) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		total atomic.Int64
	)
	deadline := time.Now().Add(dur)
	for w := range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if err := op(ctx, w); err != nil {
					cancel(err)
					return
				}
				total.Add(1)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return total.Load(), nil
}

// countRange runs op for i in [lo, hi) on conc goroutines (goroutine w
// takes lo+w, lo+w+conc, ...) and returns the calls made.
func countRange(ctx context.Context, conc, lo, hi int, op func(ctx context.Context, i int) error) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for i := lo + w; i < hi && ctx.Err() == nil; i += conc {
				if err := op(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return int64(hi - lo), nil
}

const filler = "the quick brown fox jumps over the lazy dog 0123456789\n"

// fileContent is size bytes of text: a version line, then filler lines.
func fileContent(kind string, version, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s version %010d\n", kind, version)
	return padTo(&b, size)
}

// counterLine is the line a one-line edit changes.
func counterLine(k int) string { return fmt.Sprintf("counter = %08d", k) }

// editContent is size bytes of text whose middle line is counterLine(k).
func editContent(k, size int) string {
	var b strings.Builder
	for b.Len() < size/2 {
		b.WriteString(filler)
	}
	b.WriteString(counterLine(k) + "\n")
	return padTo(&b, size)
}

// padTo fills b with filler lines up to size bytes, the last line cut short
// and ended with a newline.
func padTo(b *strings.Builder, size int) string {
	for b.Len() < size {
		b.WriteString(filler)
	}
	s := b.String()[:size-1] + "\n"
	return s
}

// median of xs (xs is not modified).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

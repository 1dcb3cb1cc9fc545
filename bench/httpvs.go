package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP against stdio (issue 26): calls/s of `read` of one 1 KiB file
// through `harness serve --listen` (MCP Streamable HTTP on loopback, a
// bearer token checked against a token file, a principal whose workspace
// is the directory) and through `harness serve` over stdio, the same
// binary on the same directory and file and the same protocol version, at
// concurrency 1 and 8, the two taking turns slice by slice (measureTimed),
// each run with fresh servers.

// onlyHTTP is the -only value that measures HTTP against stdio alone.
const onlyHTTP = "http"

// httpTargetRatio is issue 26's target: HTTP at least this times stdio.
const httpTargetRatio = 0.7

// Markers of HTTP against stdio's section of the markdown file.
const (
	httpBeginMarker = "<!-- bench-http:begin -->"
	httpEndMarker   = "<!-- bench-http:end -->"
)

// Series keys of the two transports.
const (
	keyStdio = "stdio"
	keyHTTP  = "http"
)

// httpStats are the samples of the HTTP against stdio measurement, by
// concurrency and series key, one per run.
type httpStats struct {
	rate, serverCPU, clientCPU map[int]map[string][]float64
	resultBytes                map[string]int64
	protocols                  map[string]string
	runs                       int
	loadStart, loadEnd         string
	date                       string
	dir                        string
	took                       time.Duration
	cfg                        config
}

// listeningRe matches the one line `serve --listen` writes to stderr.
var listeningRe = regexp.MustCompile(`harness: listening on (http://127\.0\.0\.1:[0-9]+/mcp)`)

// httpServe is harness serve over Streamable HTTP with one client session.
type httpServe struct {
	*server
	cmd *exec.Cmd
}

// bearerTransport adds "Authorization: Bearer TOKEN" to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// httpSpec is harness serve --listen 127.0.0.1:0 with the token file and
// principals file of conf (writeHTTPConf) in workspace-write mode, the
// directory its temp root as for the stdio series.
func httpSpec(bin, conf string) serverSpec {
	spec := harnessSpec(bin, nil, durabilityFull)
	spec.key, spec.label = keyHTTP, "harness serve --listen (Streamable HTTP)"
	spec.command = func(dir string) *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token-file", filepath.Join(conf, "tokens"),
			"--principals", filepath.Join(conf, "principals.yaml"), "--mode", "workspace-write", "--temp-root", dir,
			"--durability", durabilityFull, "--log-level", "warn")
		cmd.Env = withoutHarnessEnv(os.Environ())
		return cmd
	}
	return spec
}

// writeHTTPConf writes into conf a token file with one fresh token for the
// principal "bench" and a principals file giving it dir as its workspace,
// and returns the token.
func writeHTTPConf(conf, dir string) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	sum := sha256.Sum256([]byte(token))
	if err := os.WriteFile(filepath.Join(conf, "tokens"), []byte("bench sha256:"+hex.EncodeToString(sum[:])+"\n"), 0o600); err != nil {
		return "", err
	}
	principals := fmt.Sprintf("principals:\n  bench:\n    workspaces: [%s]\n    mode: workspace-write\n    max-concurrent-calls: %d\n", strconv.Quote(dir), maxConc)
	return token, os.WriteFile(filepath.Join(conf, "principals.yaml"), []byte(principals), 0o600)
}

// startHTTP starts spec (httpSpec) on dir, waits for its listening line
// and connects one client session with token over a transport that keeps
// enough connections for maxConc calls at once.
func startHTTP(ctx context.Context, spec serverSpec, dir, token, protocol string) (*httpServe, error) {
	cmd := spec.command(dir)
	cmd.Dir = dir
	stderr := &tailBuffer{max: 16 << 10}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	urls := make(chan string, 1)
	go scanListening(pipe, stderr, urls)
	h := &httpServe{cmd: cmd}
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		h.stop()
		return nil, fmt.Errorf("%s: no listening line within 30 s\n%s", spec.key, stderr)
	case <-ctx.Done():
		h.stop()
		return nil, ctx.Err()
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 2 * maxConc
	client := mcp.NewClient(&mcp.Implementation{Name: "harness-bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, base: base}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		h.stop()
		return nil, fmt.Errorf("%s: connect to %s: %w\n%s", spec.key, url, err, stderr)
	}
	h.server = &server{spec: spec, dir: dir, sess: sess, stderr: stderr}
	if err := checkServerProcess(cmd, cmd.Process.Pid); err != nil {
		progress("%s: %v", spec.key, err)
	} else {
		h.pid = cmd.Process.Pid
	}
	if ir := sess.InitializeResult(); ir != nil {
		h.proto = ir.ProtocolVersion
	}
	return h, nil
}

// scanListening copies r into tail and sends the URL of the first
// listening line on urls.
func scanListening(r io.Reader, tail *tailBuffer, urls chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		_, _ = tail.Write([]byte(line + "\n"))
		if m := listeningRe.FindStringSubmatch(line); m != nil && !sent {
			urls <- m[1]
			sent = true
		}
	}
}

// stop closes the session, then ends the server with SIGTERM (a graceful
// drain) and waits for it.
func (h *httpServe) stop() {
	if h.server != nil {
		_ = h.sess.Close()
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
}

// measureHTTP measures read over stdio and over HTTP, cfg.runs runs.
func measureHTTP(ctx context.Context, cfg config, harnessBin string) (*httpStats, error) {
	began := time.Now()
	st := &httpStats{
		rate: map[int]map[string][]float64{}, serverCPU: map[int]map[string][]float64{}, clientCPU: map[int]map[string][]float64{},
		resultBytes: map[string]int64{}, protocols: map[string]string{},
		runs: cfg.runs, loadStart: loadAverage(), date: time.Now().Format("2006-01-02 15:04"), cfg: cfg,
	}
	for _, c := range concurrencies {
		st.rate[c], st.serverCPU[c], st.clientCPU[c] = map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	}
	root, err := os.MkdirTemp("", "harness-bench-http-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, err
	}
	st.dir = filepath.Dir(root)
	for run := range cfg.runs {
		if err := measureHTTPRun(ctx, cfg, harnessBin, filepath.Join(root, "run"+strconv.Itoa(run+1)), run, st); err != nil {
			return nil, err
		}
	}
	st.loadEnd = loadAverage()
	st.took = time.Since(began)
	return st, nil
}

// measureHTTPRun is one run: fresh servers on a fresh directory, then each
// concurrency in turn.
func measureHTTPRun(ctx context.Context, cfg config, harnessBin, dir string, run int, st *httpStats) error {
	conf := filepath.Join(dir, "conf")
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{conf, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	token, err := writeHTTPConf(conf, ws)
	if err != nil {
		return err
	}
	fx, err := makeFixture(ws, cfg.fileSize)
	if err != nil {
		return err
	}
	h, err := startHTTP(ctx, httpSpec(harnessBin, conf), ws, token, cfg.protocol)
	if err != nil {
		return err
	}
	defer h.stop()
	// The stdio session asks for the protocol the HTTP one settled on, so
	// that the two differ only in the transport.
	stdio, err := startServer(ctx, harnessSpec(harnessBin, nil, durabilityFull), ws, h.proto, true)
	if err != nil {
		return err
	}
	stdio.spec.key = keyStdio
	defer func() { _ = stdio.close() }()
	servers := []*server{stdio, h.server}
	for _, s := range servers {
		st.protocols[s.spec.key] = s.proto
		res, err := s.call(ctx, s.spec.read(fx.readPath))
		if err != nil {
			return err
		}
		if !strings.Contains(resultText(res), "read version 0000000000") {
			return fmt.Errorf("%s: read of %s returned unexpected text %q", s.spec.key, fx.readPath, resultText(res))
		}
	}
	for _, c := range concurrencies {
		smp, err := measureTimed(ctx, cfg, servers, []*fixture{fx, fx}, point{wRead, c}, run%2 == 1)
		if err != nil {
			return err
		}
		for i, s := range servers {
			k := s.spec.key
			st.rate[c][k] = append(st.rate[c][k], smp[i].rate)
			st.serverCPU[c][k] = append(st.serverCPU[c][k], smp[i].cpuPerCall)
			st.clientCPU[c][k] = append(st.clientCPU[c][k], smp[i].clientCPU)
			st.resultBytes[k] = smp[i].resultBytes
		}
		progress("http run %d/%d  read c=%d  stdio %7.0f calls/s  http %7.0f calls/s  http/stdio %s  server CPU per call stdio %4.0f µs, http %4.0f µs",
			run+1, cfg.runs, c, smp[0].rate, smp[1].rate, fmtRatio(smp[1].rate/smp[0].rate), smp[0].cpuPerCall, smp[1].cpuPerCall)
	}
	return nil
}

// ratios are the per-run HTTP over stdio ratios at concurrency c.
func (st *httpStats) ratios(c int) []float64 {
	out := make([]float64, len(st.rate[c][keyHTTP]))
	for i := range out {
		out[i] = st.rate[c][keyHTTP][i] / st.rate[c][keyStdio][i]
	}
	return out
}

// fmtRatio3 formats a ratio with three decimals: the target is met or
// missed at the third.
func fmtRatio3(v float64) string { return fmt.Sprintf("%.3fx", v) }

// ratio is HTTP over stdio of the medians at concurrency c.
func (st *httpStats) ratio(c int) float64 {
	return median(st.rate[c][keyHTTP]) / median(st.rate[c][keyStdio])
}

// printHTTP prints the figures on stderr.
func printHTTP(st *httpStats) {
	progress("read over Streamable HTTP against stdio (issue 26), medians of %d runs:", st.runs)
	for _, c := range concurrencies {
		r := st.ratios(c)
		fmt.Fprintf(os.Stderr, "  c=%d  stdio %s calls/s  http %s calls/s  http/stdio %s (%.2f–%.2f)  target >= %.1fx: %s\n",
			c, fmtRate(median(st.rate[c][keyStdio])), fmtRate(median(st.rate[c][keyHTTP])), fmtRatio3(st.ratio(c)),
			slices.Min(r), slices.Max(r), httpTargetRatio, strings.Trim(status(st.ratio(c), httpTargetRatio), "*"))
	}
}

// renderHTTP renders HTTP against stdio's section, its markers included.
func renderHTTP(st *httpStats) string {
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("%s\n", httpBeginMarker)
	pf("## Read over Streamable HTTP against stdio (issue 26)\n\n")
	pf("<!-- Generated by `make bench-http` (bench/httpvs.go): edit the generator, not this text. -->\n\n")
	pf("Command:\n\n```sh\nmake bench-http\n```\n\n")
	pf("It builds `bin/harness` and runs `cd bench && go run . -harness ../bin/harness -only http -out ../docs/benchmarks.md`, ")
	pf("which rewrites only this section (between the `bench-http:begin`/`bench-http:end` markers); `make bench` runs it too.\n\n")
	pf("Measured %s on %d cores (Linux %s), load average (1 min) %s at the start and %s at the end; %d runs in %s.\n\n",
		st.date, runtime.NumCPU(), kernelRelease(), st.loadStart, st.loadEnd, st.runs, st.took.Round(time.Second))
	pf("| concurrency | stdio calls/s | HTTP calls/s | HTTP / stdio | target | CPU per call, server + client: stdio / HTTP |\n")
	pf("|---|---|---|---|---|---|\n")
	for _, c := range concurrencies {
		r := st.ratios(c)
		pf("| %d | %s | %s | %s (%.2f–%.2f) | >= %.1fx: %s | %.0f µs + %.0f µs / %.0f µs + %.0f µs |\n", c,
			fmtRate(median(st.rate[c][keyStdio])), fmtRate(median(st.rate[c][keyHTTP])),
			fmtRatio3(st.ratio(c)), slices.Min(r), slices.Max(r), httpTargetRatio, status(st.ratio(c), httpTargetRatio),
			median(st.serverCPU[c][keyStdio]), median(st.clientCPU[c][keyStdio]), median(st.serverCPU[c][keyHTTP]), median(st.clientCPU[c][keyHTTP]))
	}
	pf("\nOne result, JSON encoded: stdio %s bytes, HTTP %s bytes (the same result; over HTTP it travels ", fmtInt(int(st.resultBytes[keyStdio])), fmtInt(int(st.resultBytes[keyHTTP])))
	pf("in a server-sent event of the POST's response). Protocol: %s over HTTP (the go-sdk client's default negotiation), and the stdio session asks for the same (%s), so the two differ only in the transport.\n\n", st.protocols[keyHTTP], st.protocols[keyStdio])
	pf("Both series are the same `bin/harness` serving the same directory, reading the same %s-byte file: ", fmtInt(st.cfg.fileSize))
	pf("stdio, `harness serve --workspace DIR --mode workspace-write --temp-root DIR --durability full --log-level warn` ")
	pf("with `mcp.CommandTransport`; HTTP, `harness serve --listen 127.0.0.1:0 --token-file T --principals P --mode workspace-write ")
	pf("--temp-root DIR --durability full --log-level warn` (T holding one principal's hashed token, P giving it DIR as its one ")
	pf("workspace and %d concurrent calls) with `mcp.StreamableClientTransport` over an `http.Client` that adds ", maxConc)
	pf("`Authorization: Bearer` to every request and keeps up to %d idle connections (every call is one POST; the ", 2*maxConc)
	pf("session's standalone GET stream stays open); the environment's `HARNESS_*` variables removed. ")
	pf("One go-sdk session per server; concurrency 8 is 8 goroutines sharing it, each awaiting its call before the next. ")
	pf("Per run both servers start fresh on a fresh directory under `%s`; each reads the file once (checked), then per ", st.dir)
	pf("concurrency %s of untimed calls each and %d slices of %s per server, the two taking turns slice by slice ",
		st.cfg.warmup, st.cfg.slices, st.cfg.duration/time.Duration(st.cfg.slices))
	pf("(which goes first alternating from slice to slice and from run to run). Figures are medians of the runs; the ratio is ")
	pf("HTTP's median over stdio's, with the range of the per-run ratios in parentheses. CPU per call: the server process's ")
	pf("user and system time in the timed part (`/proc/PID/stat`) and the bench process's own (`getrusage`: the client, ")
	pf("whose HTTP side does more work than its stdio side), over the calls.\n")
	pf("%s\n", httpEndMarker)
	return b.String()
}

// updateHTTPMarked replaces HTTP against stdio's section of path with part,
// or, when it has none, puts part right after the generated section.
func updateHTTPMarked(path, part string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin := bytes.Index(raw, []byte(httpBeginMarker))
	end := bytes.Index(raw, []byte(httpEndMarker))
	var out []byte
	switch {
	case begin >= 0 && end > begin:
		end += len(httpEndMarker)
		if end < len(raw) && raw[end] == '\n' {
			end++
		}
		out = append(append(append(out, raw[:begin]...), part...), raw[end:]...)
	case begin >= 0 || end >= 0:
		return fmt.Errorf("%s: only one of %s and %s is present", path, httpBeginMarker, httpEndMarker)
	default:
		at := bytes.Index(raw, []byte(endMarker))
		if at < 0 {
			return errors.New(path + ": no generated section (" + beginMarker + " ... " + endMarker + ") to put HTTP against stdio after: run make bench once")
		}
		at += len(endMarker)
		if at < len(raw) && raw[at] == '\n' {
			at++
		}
		out = append(append(append(append(out, raw[:at]...), '\n'), part...), raw[at:]...)
	}
	return writeAtomic(path, out)
}

// runHTTPOnly measures HTTP against stdio, prints it and, with -out,
// rewrites its section.
func runHTTPOnly(ctx context.Context, cfg config) error {
	harnessBin, err := filepath.Abs(cfg.harness)
	if err != nil {
		return err
	}
	if _, err := os.Stat(harnessBin); err != nil {
		return fmt.Errorf("harness binary: %w (build it: make build)", err)
	}
	st, err := measureHTTP(ctx, cfg, harnessBin)
	if err != nil {
		return err
	}
	printHTTP(st)
	if cfg.out == "" {
		fmt.Print(renderHTTP(st))
		return nil
	}
	if err := updateHTTPMarked(cfg.out, renderHTTP(st)); err != nil {
		return err
	}
	progress("wrote read over HTTP against stdio into %s", cfg.out)
	return nil
}

//go:build linux

package main_test

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpPrincipal is one principal of an HTTP server under test: its token
// subject, its bearer token and its one workspace.
type httpPrincipal struct {
	name, token, ws string
}

// httpServer is `harness serve --listen 127.0.0.1:0` running as a child
// process: its /mcp URL, its process and what it wrote to stderr.
type httpServer struct {
	url string
	cmd *exec.Cmd
	// cwd is the server's working directory, empty: an HTTP session never
	// falls back to it, so it must stay empty.
	cwd string

	mu     sync.Mutex
	stderr []string // every stderr line but the gctrace lines
	heaps  []int    // live heap in MB after each collection (GODEBUG=gctrace=1)
}

// listeningLine is the one line `serve --listen` writes to stderr on start.
var listeningLine = regexp.MustCompile(`^harness: listening on (http://127\.0\.0\.1:[0-9]+/mcp)$`)

// gcLine is a gctrace line; the third number of "A->B->C MB" is the live
// heap after that collection.
var gcLine = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

// newPrincipal is principal name with a fresh random bearer token (64 hex
// digits, as `openssl rand -hex 32` makes) and workspace ws.
func newPrincipal(t *testing.T, name, ws string) httpPrincipal {
	t.Helper()
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	return httpPrincipal{name: name, token: hex.EncodeToString(raw), ws: ws}
}

// startHTTPServer writes the token file and the principals file for ps
// (each principal's one workspace, mode and widest mode workspace-write,
// maxCalls concurrent calls, also the --principal-max-calls) into a fresh
// temp dir and starts the built binary on them in workspace-write mode with
// maxCalls x len(ps)
// concurrent calls in all and GODEBUG=gctrace=1, in an empty working
// directory of its own (cwd); it waits for the listening line, and stops
// the server (SIGTERM, then a clean exit is expected) when the test ends.
// maxCalls 0 sets no cap: the server runs on its defaults, with
// GOMAXPROCS=2 (8 call slots, 4 a principal, as on a 2-core machine).
func startHTTPServer(t *testing.T, ps []httpPrincipal, maxCalls int) *httpServer {
	t.Helper()
	bin, err := buildOnce()
	require.NoError(t, err)
	conf := t.TempDir()
	var tokens, principals strings.Builder
	tokens.WriteString("# subject sha256:hex of the token\n")
	principals.WriteString("principals:\n")
	for _, p := range ps {
		sum := sha256.Sum256([]byte(p.token))
		fmt.Fprintf(&tokens, "%s sha256:%s\n", p.name, hex.EncodeToString(sum[:]))
		fmt.Fprintf(&principals, "  %s:\n    workspaces: [%s]\n    mode: workspace-write\n    widest-mode: workspace-write\n", p.name, strconv.Quote(p.ws))
		if maxCalls > 0 {
			fmt.Fprintf(&principals, "    max-concurrent-calls: %d\n", maxCalls)
		}
	}
	tokenFile := filepath.Join(conf, "tokens")
	principalsFile := filepath.Join(conf, "principals.yaml")
	require.NoError(t, os.WriteFile(tokenFile, []byte(tokens.String()), 0o600))
	require.NoError(t, os.WriteFile(principalsFile, []byte(principals.String()), 0o600))

	args := []string{
		"serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--principals", principalsFile,
		"--mode", "workspace-write", "--log-level", "warn",
	}
	env := append(withoutHarnessEnv(os.Environ()), "GODEBUG=gctrace=1")
	if maxCalls > 0 {
		args = append(args, "--principal-max-calls", strconv.Itoa(maxCalls), "--max-concurrent-calls", strconv.Itoa(maxCalls*len(ps)))
	} else {
		env = append(env, "GOMAXPROCS=2")
	}
	s := &httpServer{cmd: exec.Command(bin, args...), cwd: t.TempDir()}
	s.cmd.Dir = s.cwd
	s.cmd.Env = env
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	urls := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		s.scan(stderr, urls)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		waited := make(chan error, 1)
		go func() { <-drained; waited <- s.cmd.Wait() }()
		select {
		case err := <-waited:
			assert.NoError(t, err, "serve exits cleanly on SIGTERM; stderr:\n%s", s.stderrText())
		case <-time.After(40 * time.Second):
			_ = s.cmd.Process.Kill()
			t.Errorf("serve did not exit within 40 s of SIGTERM; stderr:\n%s", s.stderrText())
		}
	})
	select {
	case s.url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatalf("no listening line within 60 s; stderr:\n%s", s.stderrText())
	}
	return s
}

// withoutHarnessEnv drops the HARNESS_* variables, which would change the
// server's configuration.
func withoutHarnessEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HARNESS_") {
			out = append(out, kv)
		}
	}
	return out
}

// scan reads the server's stderr to its end: the first listening line's
// URL goes to urls, gctrace lines to the heap record, the rest is kept.
func (s *httpServer) scan(r io.Reader, urls chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		if m := gcLine.FindStringSubmatch(line); m != nil {
			live, _ := strconv.Atoi(m[3])
			s.mu.Lock()
			s.heaps = append(s.heaps, live)
			s.mu.Unlock()
			continue
		}
		if m := listeningLine.FindStringSubmatch(line); m != nil && !sent {
			urls <- m[1]
			sent = true
		}
		s.mu.Lock()
		s.stderr = append(s.stderr, line)
		s.mu.Unlock()
	}
}

func (s *httpServer) stderrText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.stderr, "\n")
}

// gcCount is how many collections the server has reported so far.
func (s *httpServer) gcCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heaps)
}

// liveHeapSince is the largest live heap in MB after the collections from
// number from on (-1 when there were none).
func (s *httpServer) liveHeapSince(from int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	peak := -1
	for _, h := range s.heaps[min(from, len(s.heaps)):] {
		peak = max(peak, h)
	}
	return peak
}

// rss is the server process's resident set in bytes (VmRSS of
// /proc/PID/status).
func (s *httpServer) rss() (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.cmd.Process.Pid)
}

// rssSampler reads the server's resident set every 20 ms and keeps the
// peak since it was last taken.
type rssSampler struct {
	mu   sync.Mutex
	peak int64
	err  error
	quit chan struct{}
	done sync.WaitGroup
}

// sampleRSS starts sampling the server's resident set.
func (s *httpServer) sampleRSS() *rssSampler {
	r := &rssSampler{quit: make(chan struct{})}
	r.done.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			b, err := s.rss()
			r.mu.Lock()
			r.peak = max(r.peak, b)
			r.err = cmp.Or(r.err, err)
			r.mu.Unlock()
			select {
			case <-r.quit:
				return
			case <-tick.C:
			}
		}
	})
	return r
}

// take returns the peak in bytes since the last take (or the start) and
// starts the next; an error when a read failed.
func (r *rssSampler) take() (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	peak := r.peak
	r.peak = 0
	return peak, r.err
}

// stop ends the sampling.
func (r *rssSampler) stop() {
	close(r.quit)
	r.done.Wait()
}

// bearer adds "Authorization: Bearer TOKEN" to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectHTTP opens one MCP session over Streamable HTTP as p, through
// base (shared by the sessions, so connections are reused). The client
// offers no roots and no elicitation.
func (s *httpServer) connectHTTP(ctx context.Context, p httpPrincipal, base http.RoundTripper, name string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   s.url,
		HTTPClient: &http.Client{Transport: bearer{token: p.token, base: base}},
	}, nil)
}

package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/internal/fixture"
)

// Load test parameters: loadClients concurrent connections, each making
// loadCalls() mixed calls after loadWarmup warm-up calls.
const (
	loadClients = 8
	loadWarmup  = 200
	// loadOwnFiles is how many files each client cycles its writes over,
	// loadMissing how many absent names it cycles its failed reads over:
	// both bounded, so a growing heap means a leak, not a bigger working set.
	loadOwnFiles = 4
	loadMissing  = 16
)

// loadCalls is the number of measured calls per client: 10,000 under
// HARNESS_SOAK=1 (make soak), a short run otherwise (make test).
func loadCalls() int {
	if os.Getenv("HARNESS_SOAK") == "1" {
		return 10_000
	}
	return 300
}

// loadWorld is the composed server over a workspace, with an outside
// directory no call may write.
type loadWorld struct {
	srv         *mcpserver.Server
	ws, outside string
}

func newLoadWorld(t testing.TB) loadWorld {
	t.Helper()
	return newCappedWorld(t, 0)
}

// loadMtime is the modification time of the listed fixture entries.
var loadMtime = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// newCappedWorld is newLoadWorld with at most maxCalls tool calls running at
// once (0: the default cap).
func newCappedWorld(t testing.TB, maxCalls int) loadWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base,
		"ws/shared.txt: shared line one\nshared line two\nshared line three\n",
		"ws/dir/a.txt: a\n",
		"ws/dir/b.txt: bb\n",
		"ws/dir/sub/",
		"outside/",
	)
	for _, p := range []string{"ws/dir/a.txt", "ws/dir/b.txt", "ws/dir/sub"} {
		require.NoError(t, os.Chtimes(filepath.Join(base, p), loadMtime, loadMtime), "a known time for the list's text")
	}
	w := loadWorld{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	cfg := config.Config{
		FS: "sandbox", Mode: "workspace-write", Workspace: w.ws, TempRoots: []string{w.ws},
		LogLevel: "error", LogFormat: "json",
	}
	opts, err := compose.Options(cfg, io.Discard,
		fx.Supply(mcpserver.Options{Version: "load", Workspace: w.ws, MaxConcurrentCalls: maxCalls}),
		mcpserver.Module,
		fx.Populate(&w.srv),
	)
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return w
}

// loadConn is one client connection and its server session.
type loadConn struct {
	cs *mcp.ClientSession
	ss *mcp.ServerSession
}

// connect opens one in-memory connection to the server, speaking protocol
// (empty: the newest). The client offers no roots and no elicitation.
func (w loadWorld) connect(ctx context.Context, t *testing.T, protocol string) loadConn {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := w.srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	require.NoError(t, err)
	return loadConn{cs: cs, ss: ss}
}

// close ends the connection from the client side and waits for the server
// side to finish.
func (c loadConn) close() error {
	err := c.cs.Close()
	_ = c.ss.Wait()
	return err
}

// loadStats counts what the clients saw.
type loadStats struct {
	calls, protocolErrors, wrong atomic.Int64

	mu    sync.Mutex
	first []string // the first few failures, for the report
}

func (s *loadStats) fail(format string, args ...any) {
	s.wrong.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.first) < 20 {
		s.first = append(s.first, fmt.Sprintf(format, args...))
	}
}

// loadClient is one client's worker: its own files, and the mix of calls.
type loadClient struct {
	w     loadWorld
	id    int
	cs    *mcp.ClientSession
	stats *loadStats
	// content is what the client last wrote to each own file ("" before
	// the first write).
	content [loadOwnFiles]string
}

func (c *loadClient) own(j int) string {
	return "c" + strconv.Itoa(c.id) + "-" + strconv.Itoa(j) + ".txt"
}

func (c *loadClient) call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, bool) {
	c.stats.calls.Add(1)
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.stats.protocolErrors.Add(1)
		c.stats.fail("client %d: %s %v: protocol error: %v", c.id, name, args, err)
		return nil, false
	}
	return res, true
}

// expectOK checks a success whose text is want (when want is not "").
func (c *loadClient) expectOK(res *mcp.CallToolResult, what, want string) bool {
	switch {
	case res.IsError:
		c.stats.fail("client %d: %s: unexpected error %v: %s", c.id, what, res.Meta[mcpserver.CodeMetaKey], loadText(res))
		return false
	case res.StructuredContent == nil:
		c.stats.fail("client %d: %s: no structured content", c.id, what)
		return false
	case want != "" && loadText(res) != want:
		c.stats.fail("client %d: %s: text %q, want %q", c.id, what, loadText(res), want)
		return false
	}
	return true
}

// expectCode checks a tool error with code.
func (c *loadClient) expectCode(res *mcp.CallToolResult, what, code string) {
	if !res.IsError || res.Meta[mcpserver.CodeMetaKey] != code {
		c.stats.fail("client %d: %s: isError=%v code=%v, want %s: %s", c.id, what, res.IsError, res.Meta[mcpserver.CodeMetaKey], code, loadText(res))
	}
}

func (c *loadClient) expectDisk(what, path, want string) {
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		c.stats.fail("client %d: %s: disk holds %q (%v), want %q", c.id, what, got, err, want)
	}
}

// step makes call number k of the mix: read, list, write of an own file,
// read of it, edit of it, a denied write outside, a bad-argument call and a
// read of an absent file.
func (c *loadClient) step(ctx context.Context, k int) {
	j := (k / 8) % loadOwnFiles
	own := c.own(j)
	ownPath := filepath.Join(c.w.ws, own)
	switch k % 8 {
	case 0: // read of a shared file, whole or windowed
		args := map[string]any{"file_path": "shared.txt"}
		want := "<path>" + filepath.Join(c.w.ws, "shared.txt") + "</path>\n<type>file</type>\n<content>\n" +
			"1: shared line one\n2: shared line two\n3: shared line three\n\n(End of file - total 3 lines)\n</content>"
		if k%16 == 8 {
			args["offset"], args["limit"] = 2, 1
			want = "<path>" + filepath.Join(c.w.ws, "shared.txt") + "</path>\n<type>file</type>\n<content>\n" +
				"2: shared line two\n\n(Showing lines 2-2 of 3. Use offset=3 to continue.)\n</content>"
		}
		if res, ok := c.call(ctx, "read", args); ok {
			c.expectOK(res, "read shared.txt", want)
		}
	case 1: // list
		want := "<path>" + filepath.Join(c.w.ws, "dir") + "</path>\n<type>directory</type>\n<entries>\n" +
			"a.txt (2 bytes, modified 2001-02-03T04:05:06Z)\nb.txt (3 bytes, modified 2001-02-03T04:05:06Z)\nsub/ (modified 2001-02-03T04:05:06Z)\n\n(End of directory - total 3 entries)\n</entries>"
		if res, ok := c.call(ctx, "list", map[string]any{"path": "dir"}); ok {
			c.expectOK(res, "list dir", want)
		}
	case 2: // write of an own file: create, then update
		content := fmt.Sprintf("client %d iteration %d\nsecond line\n", c.id, k)
		verb := "Updated file"
		if c.content[j] == "" {
			verb = "Created file"
		}
		want := "<path>" + ownPath + "</path>\n<type>file</type>\n<content>\n" + verb + "\n</content>"
		if res, ok := c.call(ctx, "write", map[string]any{"file_path": own, "content": content}); ok && c.expectOK(res, "write "+own, want) {
			c.content[j] = content
		}
		c.expectDisk("write "+own, ownPath, c.content[j])
	case 3: // read of the own file just written
		want := "<path>" + ownPath + "</path>\n<type>file</type>\n<content>\n1: " +
			strings.ReplaceAll(strings.TrimSuffix(c.content[j], "\n"), "\n", "\n2: ") + "\n\n(End of file - total 2 lines)\n</content>"
		if res, ok := c.call(ctx, "read", map[string]any{"file_path": own}); ok {
			c.expectOK(res, "read "+own, want)
		}
	case 4: // edit of the own file after the read
		edited := strings.Replace(c.content[j], "iteration", "edited", 1)
		res, ok := c.call(ctx, "edit", map[string]any{"file_path": own, "old_string": "iteration", "new_string": "edited"})
		if ok && c.expectOK(res, "edit "+own, "The file "+ownPath+" has been updated successfully.") {
			c.content[j] = edited
		}
		c.expectDisk("edit "+own, ownPath, c.content[j])
	case 5: // a write outside the writable roots: denied, nothing lands
		outside := filepath.Join(c.w.outside, "c"+strconv.Itoa(c.id)+"-"+strconv.Itoa(k)+".txt")
		if res, ok := c.call(ctx, "write", map[string]any{"file_path": outside, "content": "x"}); ok {
			c.expectCode(res, "write outside", "FS_SANDBOX_DENIED")
		}
		if _, err := os.Lstat(outside); !os.IsNotExist(err) {
			c.stats.fail("client %d: denied write outside: %s exists (%v)", c.id, outside, err)
		}
	case 6: // bad arguments, a different kind each time
		bad := []struct {
			tool string
			args map[string]any
		}{
			{"read", map[string]any{"file_path": "shared.txt", "offset": 0}},
			{"read", map[string]any{"file_path": 5}},
			{"write", map[string]any{"file_path": own, "content": map[string]any{}}},
			{"edit", map[string]any{"file_path": own, "old_string": "same", "new_string": "same"}},
			{"list", map[string]any{"path": "dir", "limit": "x"}},
			{"read", map[string]any{}},
		}[(k/8)%6]
		if res, ok := c.call(ctx, bad.tool, bad.args); ok {
			c.expectCode(res, fmt.Sprintf("%s %v", bad.tool, bad.args), "INVALID_ARGUMENT")
		}
		if c.content[j] != "" {
			c.expectDisk("bad arguments", ownPath, c.content[j])
		}
	case 7: // a read of an absent file
		missing := "missing-" + strconv.Itoa((k/8)%loadMissing) + ".txt"
		if res, ok := c.call(ctx, "read", map[string]any{"file_path": missing}); ok {
			c.expectCode(res, "read "+missing, "FS_NOT_FOUND")
		}
	}
}

// loadHeap is the live heap after a full collection.
func loadHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// loadFDs counts this process's open file descriptors.
func loadFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// loadSettle waits up to 5 s for the goroutine count to drop to at most
// want (want < 0: to stop changing for 100 ms), and returns the last count.
func loadSettle(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if want >= 0 && n <= want {
			break
		}
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if want < 0 && m == n {
			break
		}
		n = m
	}
	return n
}

const loadMiB = 1 << 20

// TestLoad serves the composed graph (fssandbox, workspace-write) to 8
// concurrent go-sdk clients, half on 2025-11-25 and half on the newest
// protocol, each making a warm-up then N mixed calls (N = 10,000 under
// HARNESS_SOAK=1), and checks every result (exact texts and codes, disk
// contents after writes and edits, nothing written outside); then that no
// call was a protocol error, the heap after the run is within 1.2x of the
// heap after warm-up, and no goroutine or file descriptor leaked once the
// clients are gone.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	n := loadCalls()
	w := newLoadWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	stats := &loadStats{}

	// One connection before the baselines, so that what the graph opens
	// lazily on first use (directory handles, caches) is not counted.
	pre := w.connect(ctx, t, "")
	preClient := &loadClient{w: w, id: 99, cs: pre.cs, stats: stats}
	for k := range 16 {
		preClient.step(ctx, k)
	}
	require.NoError(t, pre.close())
	goroutinesBefore := loadSettle(-1)
	fdsBefore := loadFDs(t)

	clients := make([]*loadClient, loadClients)
	conns := make([]loadConn, loadClients)
	for i := range clients {
		protocol := ""
		if i%2 == 0 {
			protocol = "2025-11-25"
		}
		conns[i] = w.connect(ctx, t, protocol)
		clients[i] = &loadClient{w: w, id: i, cs: conns[i].cs, stats: stats}
	}
	run := func(from, to int) {
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() {
				for k := from; k < to; k++ {
					c.step(ctx, k)
				}
			})
		}
		wg.Wait()
	}

	run(0, loadWarmup)
	heapWarm := loadHeap()
	start := time.Now()
	run(loadWarmup, loadWarmup+n)
	elapsed := time.Since(start)
	heapAfter := loadHeap()

	for _, c := range conns {
		assert.NoError(t, c.close())
	}
	goroutinesAfter := loadSettle(goroutinesBefore)
	fdsAfter := loadFDs(t)

	calls := stats.calls.Load()
	t.Logf("calls=%d errors=%d wrong=%d heapWarm=%.2fMiB heapAfter=%.2fMiB (%.2fx) goroutines=%d->%d fds=%d->%d clients=%d n=%d run=%s (%.0f calls/s)",
		calls, stats.protocolErrors.Load(), stats.wrong.Load(),
		float64(heapWarm)/loadMiB, float64(heapAfter)/loadMiB, float64(heapAfter)/float64(heapWarm),
		goroutinesBefore, goroutinesAfter, fdsBefore, fdsAfter, loadClients, n,
		elapsed.Round(time.Millisecond), float64(loadClients*n)/elapsed.Seconds())
	for _, f := range stats.first {
		t.Error(f)
	}

	assert.Equal(t, int64(16+loadClients*(loadWarmup+n)), calls, "every call was made")
	assert.Zero(t, stats.protocolErrors.Load(), "protocol errors")
	assert.Zero(t, stats.wrong.Load(), "wrong results")
	assert.LessOrEqual(t, float64(heapAfter), 1.2*float64(heapWarm), "the heap after the run is within 1.2x of the heap after warm-up")
	// The fence's Landlock executor keeps the threads of a writable-root
	// set for up to 30 s of idleness (internal/landlock): the pre-run warmed
	// one, the concurrent run up to landlockPool.
	const landlockPool = 8 // internal/landlock defaultThreadsPerSet
	assert.LessOrEqual(t, goroutinesAfter, goroutinesBefore+2+landlockPool-1, "no goroutine leak")
	assert.LessOrEqual(t, fdsAfter, fdsBefore+2, "no file descriptor leak")

	entries, err := os.ReadDir(w.outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside")
	assert.Empty(t, fixture.Residue(t, w.ws), "no staging residue")
	for _, c := range clients {
		for j, want := range c.content {
			got, err := os.ReadFile(filepath.Join(w.ws, c.own(j)))
			require.NoError(t, err)
			assert.Equal(t, want, string(got), c.own(j))
		}
	}
}

// loadText is the text of a result's text blocks.
func loadText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

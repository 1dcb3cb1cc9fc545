//go:build linux

package main_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeMetrics (issue 39): after a known sequence of calls over stdio
// (a read; a write outside denied; the same write escalated and approved;
// a command that exits 0; a command the proxy refused a host), the
// counters at --metrics-listen's /metrics hold exactly those calls, and
// nothing of a path, a command line or a host is in them.
func TestServeMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 is not installed at /usr/bin/python3 (apt-get install python3)")
	}
	w := newE2EWorld(t)
	addr := freeAddr(t)
	answers := []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"decision": "allow-once"}}}
	cs, _ := connect(t, "2025-11-25", answers, nil,
		"--workspace", w.ws, "--mode", "workspace-write", "--temp-root", w.ws, "--metrics-listen", addr)

	res := callTool(t, cs, "read", map[string]any{"file_path": "notes.txt"})
	require.False(t, res.IsError, text(res))
	outside := filepath.Join(w.outside, "secret-path-x.txt")
	res = callTool(t, cs, "write", map[string]any{"file_path": outside, "content": "x"})
	require.Equal(t, "FS_SANDBOX_DENIED", code(res), text(res))
	res = callTool(t, cs, "write", map[string]any{"file_path": outside, "content": "x", "sandbox_permissions": "danger-full-access", "justification": "The user asked."})
	require.False(t, res.IsError, text(res))
	res = callTool(t, cs, "exec", map[string]any{"command": "true"})
	require.False(t, res.IsError, text(res))
	res = callTool(t, cs, "exec", map[string]any{"command": py + ` -c "import urllib.request; urllib.request.urlopen('http://refused-host.example/')"`})
	require.Equal(t, "SANDBOX_NETWORK_DENIED", code(res), text(res))

	want := map[string]float64{
		`harness_tool_calls_total{code="",decision="allowed",tool="read"}`:                      1,
		`harness_tool_calls_total{code="FS_SANDBOX_DENIED",decision="denied",tool="write"}`:     1,
		`harness_tool_calls_total{code="",decision="approved",tool="write"}`:                    1,
		`harness_tool_calls_total{code="",decision="allowed",tool="exec"}`:                      1,
		`harness_tool_calls_total{code="SANDBOX_NETWORK_DENIED",decision="denied",tool="exec"}`: 1,
		`harness_tool_call_duration_seconds_count{tool="write"}`:                                2,
		`harness_tool_call_duration_seconds_count{tool="exec"}`:                                 2,
		`harness_commands_total{end="exit_zero"}`:                                               1,
		`harness_commands_total{end="exit_nonzero"}`:                                            1,
		`harness_command_start_seconds_count`:                                                   2,
		`harness_command_run_seconds_count`:                                                     2,
		`harness_command_hosts_refused_total`:                                                   1,
		`harness_proxy_requests_total{outcome="refused"}`:                                       1,
		`harness_proxy_requests_total{outcome="allowed"}`:                                       0,
		`harness_journal_entries_dropped_total`:                                                 0,
		`harness_sessions{principal=""}`:                                                        1,
		`harness_slot_wait_seconds_count{principal="",slot="call"}`:                             5,
		`harness_slot_wait_seconds_count{principal="",slot="command"}`:                          2,
		`harness_audit_records_written_total`:                                                   5,
		`harness_audit_records_lost_total`:                                                      0,
		`harness_background_commands{principal=""}`:                                             0,
	}
	var got map[string]float64
	var raw string
	// The audit log writes behind the calls: its count comes last.
	require.Eventually(t, func() bool {
		raw, got = scrape(t, "http://"+addr+"/metrics")
		return got[`harness_audit_records_written_total`] == 5
	}, 10*time.Second, 50*time.Millisecond, "the audit log's count")
	for k, v := range want {
		if k == `harness_background_commands{principal=""}` {
			// A gauge with no command running is not exported at all.
			_, present := got[k]
			assert.False(t, present && got[k] != 0, k)
			continue
		}
		assert.Equal(t, v, got[k], k)
	}
	var calls float64
	for k, v := range got {
		if strings.HasPrefix(k, "harness_tool_calls_total{") {
			calls += v
		}
	}
	assert.Equal(t, 5.0, calls, "no other call counted")
	for _, leak := range []string{"secret-path-x", "refused-host", "urllib", w.ws, "notes.txt"} {
		assert.NotContains(t, raw, leak)
	}
	assert.Contains(t, raw, "go_goroutines", "the runtime's collector")
	assert.Positive(t, got["harness_journal_bytes"], "the journal holds the write approved outside")
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// scrape returns url's text exposition and its samples by name and
// labels, as written ("name{a=\"x\"}").
func scrape(t *testing.T, url string) (string, map[string]float64) {
	t.Helper()
	resp, err := http.Get(url) //nolint:gosec,noctx // the test's own server
	if err != nil {
		return "", map[string]float64{}
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	samples := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		samples[line[:i]] = v
	}
	return string(b), samples
}

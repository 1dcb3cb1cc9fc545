//go:build linux

package main_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/telemetry/otlptest"
)

// TestServeOTLP (issue 39): with --otlp-endpoint, the calls of a known
// sequence over stdio (a read; a write; a write outside denied, then
// escalated and approved; a command holding a token; a command the proxy
// refused a host) reach an OTLP receiver as one span and one log record
// each, with their tool, decision and code, and the metrics as OTLP
// metrics; no file's content, no token and no other secret is sent.
func TestServeOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	py := "/usr/bin/python3"
	w := newE2EWorld(t)
	rcv := otlptest.NewReceiver(t)
	answers := []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"decision": "allow-once"}}}
	cs, _ := connect(t, "2025-11-25", answers, nil,
		"--workspace", w.ws, "--mode", "workspace-write", "--temp-root", w.ws, "--otlp-endpoint", rcv.URL())

	const content = "CONTENT-NEVER-SENT-4711"
	const token = "ghp_NeverSent0123456789abcdefghijklmn"
	res := callTool(t, cs, "read", map[string]any{"file_path": "notes.txt"})
	require.False(t, res.IsError, text(res))
	res = callTool(t, cs, "write", map[string]any{"file_path": "new.txt", "content": content})
	require.False(t, res.IsError, text(res))
	outside := filepath.Join(w.outside, "x.txt")
	res = callTool(t, cs, "write", map[string]any{"file_path": outside, "content": content})
	require.Equal(t, "FS_SANDBOX_DENIED", code(res), text(res))
	res = callTool(t, cs, "write", map[string]any{"file_path": outside, "content": content, "sandbox_permissions": "danger-full-access", "justification": "The user asked."})
	require.False(t, res.IsError, text(res))
	res = callTool(t, cs, "exec", map[string]any{"command": "GITHUB_TOKEN=" + token + " true"})
	require.False(t, res.IsError, text(res))
	want := []struct{ tool, decision, code string }{
		{"read", "allowed", ""},
		{"write", "allowed", ""},
		{"write", "denied", "FS_SANDBOX_DENIED"},
		{"write", "approved", ""},
		{"exec", "allowed", ""},
	}
	if _, err := exec.LookPath(py); err == nil {
		res = callTool(t, cs, "exec", map[string]any{"command": py + ` -c "import urllib.request; urllib.request.urlopen('http://refused-host.example/')"`})
		require.Equal(t, "SANDBOX_NETWORK_DENIED", code(res), text(res))
		want = append(want, struct{ tool, decision, code string }{"exec", "denied", "SANDBOX_NETWORK_DENIED"})
	}
	require.NoError(t, cs.Close()) // the server stops and sends what is left

	require.Eventually(t, func() bool {
		spans, logs := rcv.Counts()
		return spans == len(want) && logs == len(want) && len(rcv.Got().Metrics) > 0
	}, 20*time.Second, 20*time.Millisecond, "a span and a log record a call, and the metrics")
	got := rcv.Got()
	for i, sp := range got.Spans {
		a := otlptest.Attributes(sp.Attributes)
		assert.Equal(t, want[i].tool, sp.Name)
		assert.Equal(t, want[i].decision, a["harness.decision"], "call %d", i)
		if want[i].code != "" {
			assert.Equal(t, want[i].code, a["harness.code"], "call %d", i)
		}
		assert.NotEmpty(t, a["harness.session"])
		assert.Equal(t, sp.TraceId, got.Logs[i].TraceId)
		assert.Contains(t, got.Logs[i].Body.GetStringValue(), `"tool":"`+want[i].tool+`"`)
	}
	assert.Equal(t, "GITHUB_TOKEN=[REDACTED] true", otlptest.Attributes(got.Spans[4].Attributes)["harness.command.line"])
	raw := string(got.Raw)
	for _, leak := range []string{content, token, "hello world"} {
		assert.NotContains(t, raw, leak)
	}
	assert.Contains(t, strings.Join(got.Metrics, " "), "harness_tool_calls_total")
}

// TestServeOTLPFromEnvironment (issue 39): without --otlp-endpoint, the
// standard OTEL_EXPORTER_OTLP_ENDPOINT names the receiver, and
// OTEL_SERVICE_NAME the service.
func TestServeOTLPFromEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	w := newE2EWorld(t)
	rcv := otlptest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	t.Setenv("OTEL_SERVICE_NAME", "harness-under-test")
	cs, _ := connect(t, "2025-11-25", nil, nil, "--workspace", w.ws, "--mode", "workspace-write", "--temp-root", w.ws)
	res := callTool(t, cs, "read", map[string]any{"file_path": "notes.txt"})
	require.False(t, res.IsError, text(res))
	require.NoError(t, cs.Close())
	require.Eventually(t, func() bool {
		spans, logs := rcv.Counts()
		return spans == 1 && logs == 1
	}, 20*time.Second, 20*time.Millisecond)
	got := rcv.Got()
	assert.Equal(t, "read", got.Spans[0].Name)
	assert.Contains(t, string(got.Raw), "harness-under-test")
}

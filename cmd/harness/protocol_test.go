//go:build linux

package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
)

// oneShotWait bounds a one-shot run (the input written, stdin closed, every
// answer read, the process gone): some 0.2 s on a quiet machine, 4 s was
// passed at load 14. It is below the roots wait oneShot gives the server
// (oneShotRootsWait), so a request to the client that hangs until that
// ends fails the run.
const oneShotWait = 30 * time.Second

// oneShotRootsWait is the server's wait for the client's roots in a
// one-shot run.
const oneShotRootsWait = "120s"

// wireInit is an initialize request (protocol 2025-11-25) with id 1 whose
// client declares caps (a JSON object).
func wireInit(caps string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"oneshot","version":"v0"}}}`
}

const wireInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// oneShot runs `harness serve` with args in dir, writes lines to its stdin
// and closes it, and returns every message it wrote before it exited, and
// how it exited.
func oneShot(t *testing.T, dir string, args []string, lines ...string) ([]wireMsg, error) {
	t.Helper()
	bin, err := buildOnce()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), oneShotWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--log-level", "error", "--roots-timeout", oneShotRootsWait}, args...)...)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HARNESS_") })
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	if ctx.Err() != nil {
		t.Errorf("the server did not answer and exit within %s; stderr: %s", oneShotWait, wireLastLines(stderr.String(), 5))
	}
	var msgs []wireMsg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		msgs = append(msgs, parseWire(sc.Bytes()))
	}
	return msgs, runErr
}

// byID returns the message answering id (as JSON), if any.
func byID(msgs []wireMsg, id string) (wireMsg, bool) {
	for _, m := range msgs {
		if m.id() == id && m.fields["method"] == nil {
			return m, true
		}
	}
	return wireMsg{}, false
}

// TestServeAnswersEverythingBeforeEOF (issue 14, item 1): a client that
// writes initialize, notifications/initialized and a tools/call, then
// closes stdin, reads both answers, and the server exits 0. Twenty runs
// each, since the answers used to be lost in a race with the end of input.
// A request the server would send the client after the end (an approval
// elicitation, roots/list) fails at once: the escalated write is refused
// with its code and nothing is written; the read without a workspace falls
// back to the working directory without waiting for roots.
func TestServeAnswersEverythingBeforeEOF(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws := filepath.Join(base, "ws")
	fixture.Build(t, base, "ws/notes.txt: hello world\n", "outside/")
	outside := filepath.Join(base, "outside", "x.txt")
	workspace := []string{"--workspace", ws, "--mode", "workspace-write", "--temp-root", ws}
	readWant := "<path>" + filepath.Join(ws, "notes.txt") + "</path>\n<type>file</type>\n<content>\n1: hello world\n\n(End of file - total 1 lines)\n</content>"

	tests := []struct {
		name     string
		args     []string
		caps     string
		call     string
		wantCode string // "" for success with readWant
	}{
		{name: "read", args: workspace, caps: `{}`, call: string(wireCall(2, "read", `{"file_path":"notes.txt"}`))},
		{
			name: "read, the client offers roots it can no longer send", caps: `{"roots":{}}`,
			call: string(wireCall(2, "read", `{"file_path":"notes.txt"}`)),
		},
		{
			name: "escalated write, the client can no longer approve", args: workspace, caps: `{"elicitation":{}}`,
			call:     string(wireCall(2, "write", `{"file_path":`+wireJSONString(outside)+`,"content":"x","sandbox_permissions":"danger-full-access","justification":"test"}`)),
			wantCode: "SANDBOX_ESCALATION_REFUSED",
		},
	}
	const runs = 20
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answered := 0
			for run := range runs {
				msgs, err := oneShot(t, ws, tc.args, wireInit(tc.caps), wireInitialized, tc.call)
				initAns, okInit := byID(msgs, "1")
				callAns, okCall := byID(msgs, "2")
				if !assert.NoError(t, err, "run %d: exit", run) ||
					!assert.True(t, okInit && okCall, "run %d: initialize answered %v, call answered %v: %s", run, okInit, okCall, wireRaw(msgs)) {
					continue
				}
				assert.Nil(t, initAns.Error, initAns.raw)
				isError, code, text := callAns.toolError()
				if tc.wantCode == "" {
					assert.False(t, isError, callAns.raw)
					assert.Equal(t, readWant, text)
				} else {
					assert.True(t, isError, callAns.raw)
					assert.EqualValues(t, tc.wantCode, code, callAns.raw)
					assert.NoFileExists(t, outside)
				}
				answered++
			}
			t.Logf("%s: both answered and exit 0 in %d of %d runs", tc.name, answered, runs)
		})
	}
}

// TestServeCancelledGetsNoResponse (issue 14, item 2): a call cancelled
// with notifications/cancelled while it waits for the user's approval
// stops (the elicitation is withdrawn, nothing is written) and gets no
// response; the connection goes on serving.
func TestServeCancelledGetsNoResponse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws := filepath.Join(base, "ws")
	fixture.Build(t, base, "ws/notes.txt: hello world\n", "outside/")
	outside := filepath.Join(base, "outside", "x.txt")
	srv := startWireCaps(t, ws, `{"elicitation":{}}`)

	id := srv.id()
	require.NoError(t, srv.send(wireCall(id, "write", `{"file_path":`+wireJSONString(outside)+`,"content":"x","sandbox_permissions":"danger-full-access","justification":"test"}`), wireWait))
	ask := srv.await(func(m wireMsg) bool { return string(m.fields["method"]) == `"elicitation/create"` }, wireWait)
	require.Equal(t, "answered", ask.state, "the call asks for approval")
	askID := ask.msg.id()

	require.NoError(t, srv.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+strconv.Itoa(id)+`,"reason":"changed my mind"}}`), wireWait))
	withdrawn := srv.await(func(m wireMsg) bool { return string(m.fields["method"]) == `"notifications/cancelled"` }, wireWait)
	require.Equal(t, "answered", withdrawn.state, "the server withdraws its elicitation")
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	require.NoError(t, json.Unmarshal(withdrawn.msg.fields["params"], &p))
	assert.Equal(t, askID, string(p.RequestID))

	readID := srv.id()
	require.NoError(t, srv.send(wireCall(readID, "read", `{"file_path":"notes.txt"}`), wireWait))
	ra := srv.await(wireByID(readID), wireWait)
	require.Equal(t, "answered", ra.state, "the following read")
	for _, m := range append(withdrawn.others, ra.others...) {
		assert.NotEqual(t, strconv.Itoa(id), m.id(), "no response for the cancelled request: %s", m.raw)
	}
	assert.NoFileExists(t, outside, "the cancelled call wrote nothing")

	// Nothing for the cancelled id comes later either: a ping's answer is
	// the next message.
	pingID := srv.id()
	require.NoError(t, srv.send([]byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(pingID)+`,"method":"ping"}`), wireWait))
	pa := srv.await(wireByID(pingID), wireWait)
	require.Equal(t, "answered", pa.state)
	assert.Empty(t, wireRaw(pa.others))
}

// startWireCaps is startWire with a client declaring caps.
func startWireCaps(t *testing.T, ws, caps string, extra ...string) *wireServer {
	t.Helper()
	return startWireWith(t, t, ws, caps, extra...)
}

// TestServeLogging (issue 14, item 4): logging/setLevel refuses an unknown
// level with -32602; after a valid one the server's zap records at that
// level or above reach the client as notifications/message, and none
// before; stderr keeps its own level.
func TestServeLogging(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	tests := []struct {
		name  string
		level string // "" sends no setLevel
		want  bool   // whether the "session started" info record is sent
	}{
		{"no setLevel", "", false},
		{"setLevel debug", "debug", true},
		{"setLevel info", "info", true},
		{"setLevel notice", "notice", false},
		{"setLevel error", "error", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			ws := filepath.Join(base, "ws")
			fixture.Build(t, base, "ws/notes.txt: hello world\n")
			srv := startWireCaps(t, ws, `{}`, "--log-level", "info")

			bogus := srv.id()
			require.NoError(t, srv.send([]byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(bogus)+`,"method":"logging/setLevel","params":{"level":"bogus"}}`), wireWait))
			a := srv.await(wireByID(bogus), wireWait)
			require.Equal(t, "answered", a.state)
			if assert.NotNil(t, a.msg.Error, a.msg.raw) {
				assert.EqualValues(t, -32602, a.msg.Error.Code, a.msg.raw)
			}

			if tc.level != "" {
				id := srv.id()
				require.NoError(t, srv.send([]byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"logging/setLevel","params":{"level":"`+tc.level+`"}}`), wireWait))
				a := srv.await(wireByID(id), wireWait)
				require.Equal(t, "answered", a.state)
				require.Nil(t, a.msg.Error, a.msg.raw)
			}
			readID := srv.id()
			require.NoError(t, srv.send(wireCall(readID, "read", `{"file_path":"notes.txt"}`), wireWait))
			ra := srv.await(wireByID(readID), wireWait)
			require.Equal(t, "answered", ra.state)
			// The record is sent before the call's answer; a ping after it
			// flushes anything later.
			pingID := srv.id()
			require.NoError(t, srv.send([]byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(pingID)+`,"method":"ping"}`), wireWait))
			pa := srv.await(wireByID(pingID), wireWait)
			require.Equal(t, "answered", pa.state)

			var records []map[string]any
			for _, m := range append(ra.others, pa.others...) {
				require.Equal(t, `"notifications/message"`, string(m.fields["method"]), "only log records come unasked: %s", m.raw)
				var p struct {
					Level  string         `json:"level"`
					Logger string         `json:"logger"`
					Data   map[string]any `json:"data"`
				}
				require.NoError(t, json.Unmarshal(m.fields["params"], &p), m.raw)
				if p.Data["msg"] == "session started" {
					assert.Equal(t, "info", p.Level)
					assert.Equal(t, "mcp", p.Logger)
					assert.Equal(t, ws, p.Data["cwd"])
				}
				records = append(records, p.Data)
			}
			got := slices.ContainsFunc(records, func(d map[string]any) bool { return d["msg"] == "session started" })
			assert.Equal(t, tc.want, got, "session started sent: %v", records)
			if !tc.want {
				assert.Empty(t, records, "nothing below the client's level, nothing before setLevel")
			}
			// The server's stderr reaches the buffer through os/exec's
			// copy, which may trail its answers (make test at load 15).
			assert.Eventually(t, func() bool { return strings.Contains(srv.stderr.String(), "session started") }, wireWait, 10*time.Millisecond,
				"stderr logging is unchanged: %s", srv.stderr)
		})
	}
}

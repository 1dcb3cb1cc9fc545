package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/tool"
)

// pipeWait bounds the wait for one message over the pipes.
const pipeWait = 5 * time.Second

// pipeMsg is one JSON-RPC message from the server.
type pipeMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result *struct {
		IsError bool           `json:"isError"`
		Meta    map[string]any `json:"_meta"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// pipeServer is a Server on the package's StdioTransport over pipes, spoken
// to in raw lines.
type pipeServer struct {
	in   io.WriteCloser
	msgs chan pipeMsg
	done chan error
}

// startPipe serves tools with opts over StdioTransport and initializes the
// connection (protocol 2025-11-25) with a client declaring caps.
func startPipe(t *testing.T, opts mcpserver.Options, caps string, tools ...*tool.Tool) *pipeServer {
	t.Helper()
	srv, err := mcpserver.New(opts, tools, nil, nil)
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &pipeServer{in: inW, msgs: make(chan pipeMsg, 64), done: make(chan error, 1)}
	go func() { p.done <- srv.Run(context.Background(), &mcpserver.StdioTransport{Reader: inR, Writer: outW}) }()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m pipeMsg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.msgs <- m
			}
		}
		close(p.msgs)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case err := <-p.done:
			assert.NoError(t, err, "the server ends cleanly at the end of its input")
		case <-time.After(pipeWait):
			t.Error("the server did not stop after its input closed")
		}
		_ = outW.Close()
	})
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"pipe","version":"v0"}}}`)
	require.Nil(t, p.await(t, func(m pipeMsg) bool { return string(m.ID) == "0" }).Error)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *pipeServer) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(t, err)
}

func (p *pipeServer) call(t *testing.T, id int, name string) {
	t.Helper()
	p.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
}

// await returns the next message that matches, failing the test on a
// timeout; messages that do not match are dropped.
func (p *pipeServer) await(t *testing.T, match func(pipeMsg) bool) pipeMsg {
	t.Helper()
	deadline := time.After(pipeWait)
	for {
		select {
		case m, ok := <-p.msgs:
			require.True(t, ok, "the server closed its output")
			if match(m) {
				return m
			}
		case <-deadline:
			require.FailNow(t, "no matching message")
		}
	}
}

// blocking is a tool whose calls report on started and then wait for
// release or for their context to end (reported on stopped).
type blocking struct {
	started, release chan struct{}
	stopped          chan error
}

func newBlocking() *blocking {
	return &blocking{started: make(chan struct{}, 16), release: make(chan struct{}), stopped: make(chan error, 16)}
}

func (b *blocking) tool() *tool.Tool {
	return &tool.Tool{
		Name: "block", Description: "waits until released", InputSchema: object(), OutputSchema: object(),
		Handler: func(ctx context.Context, _ tool.Call) tool.Result {
			b.started <- struct{}{}
			select {
			case <-b.release:
				return tool.Result{Text: "released", Value: map[string]any{}}
			case <-ctx.Done():
				b.stopped <- ctx.Err()
				return tool.ErrorResult("stopped", "FS_ABORTED")
			}
		},
	}
}

// object is the schema of an object.
func object() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }

// quick is a tool that answers at once.
var quick = &tool.Tool{
	Name: "quick", Description: "answers at once", InputSchema: object(), OutputSchema: object(),
	Handler: func(context.Context, tool.Call) tool.Result {
		return tool.Result{Text: "done", Value: map[string]any{}}
	},
}

// asking is a tool that asks the connection's user to approve an
// escalation, and says what the answer was.
var asking = &tool.Tool{
	Name: "ask", Description: "asks for approval", InputSchema: object(), OutputSchema: object(),
	Handler: func(ctx context.Context, call tool.Call) tool.Result {
		out, err := call.Approver.Approve(ctx, sandbox.ApprovalRequest{
			Tool: "ask", Mode: sandbox.DangerFullAccess, Justification: "test",
		})
		if err != nil {
			return tool.ErrorResult(err.Error(), "")
		}
		return tool.Result{Text: string(out), Value: map[string]any{}}
	},
}

func resultText(m pipeMsg) string {
	if m.Result == nil || len(m.Result.Content) == 0 {
		return ""
	}
	return m.Result.Content[0].Text
}

// TestConcurrentCallCap (issue 14, item 13; issue 35): with
// --max-concurrent-calls 1 and --max-waiting-calls 4 one call runs, four
// wait, and the sixth is answered at once with a SERVER_BUSY tool error
// that says how long to wait (at least a second); once the running call is
// released the waiting ones run, each in turn, and all five succeed.
func TestConcurrentCallCap(t *testing.T) {
	b := newBlocking()
	sink := &memorySink{}
	p := startPipe(t, mcpserver.Options{Workspace: t.TempDir(), MaxConcurrentCalls: 1, MaxWaitingCalls: 4, Sink: sink}, `{}`, b.tool())
	for id := 1; id <= 6; id++ {
		p.call(t, id, "block")
	}
	<-b.started
	busy := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	require.Nil(t, busy.Error)
	assert.True(t, busy.Result.IsError)
	assert.EqualValues(t, mcpserver.CodeServerBusy, busy.Result.Meta[mcpserver.CodeMetaKey])
	assert.Contains(t, resultText(busy), "busy")
	assert.Contains(t, resultText(busy), "retry after")
	retry, ok := busy.Result.Meta[mcpserver.RetryAfterMetaKey].(float64)
	require.True(t, ok, "the retry-after hint is a number of seconds: %v", busy.Result.Meta)
	assert.GreaterOrEqual(t, retry, 1.0)
	// The refused call leaves its audit record (issue 25): the tool never
	// ran, so the server writes it.
	recs := sink.records()
	require.Len(t, recs, 1)
	assert.Equal(t, "block", recs[0].Tool)
	assert.Equal(t, audit.Refused, recs[0].Decision)
	assert.Equal(t, audit.Error, recs[0].Outcome)
	assert.Equal(t, string(mcpserver.CodeServerBusy), recs[0].Code)
	assert.NotEmpty(t, recs[0].Session)
	select {
	case <-b.started:
		t.Fatal("a second call runs beside the first under a cap of 1")
	default:
	}

	answered := map[string]bool{string(busy.ID): true}
	for range 5 {
		b.release <- struct{}{} // the running call, then each waiting one in turn
		m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
		assert.False(t, m.Result.IsError, resultText(m))
		assert.Equal(t, "released", resultText(m))
		answered[string(m.ID)] = true
		if len(answered) < 6 {
			<-b.started
		}
	}
	assert.Len(t, answered, 6, "every call got one answer")
}

// TestApprovalWaitHoldsNoSlot (issue 14, item 13): under a cap of 1, a call
// waiting for the user's approval leaves the slot free: another call runs
// and is answered meanwhile; the approved call then finishes.
func TestApprovalWaitHoldsNoSlot(t *testing.T) {
	p := startPipe(t, mcpserver.Options{Workspace: t.TempDir(), MaxConcurrentCalls: 1}, `{"elicitation":{}}`, asking, quick)
	p.call(t, 1, "ask")
	ask := p.await(t, func(m pipeMsg) bool { return m.Method == "elicitation/create" })

	p.call(t, 2, "quick")
	m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	assert.Equal(t, "2", string(m.ID), "the other call is answered while the first waits for the user")
	assert.Equal(t, "done", resultText(m))

	p.send(t, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"action":"accept","content":{"decision":"allow-once"}}}`)
	m = p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	assert.Equal(t, "1", string(m.ID))
	assert.Equal(t, string(sandbox.AllowedOnce), resultText(m))
}

// TestCancelledCallStopsWithoutAnswer (issue 14, item 2): a running call
// cancelled with notifications/cancelled sees its context end, and no
// response is sent for it; the slot it held serves the next call.
func TestCancelledCallStopsWithoutAnswer(t *testing.T) {
	b := newBlocking()
	p := startPipe(t, mcpserver.Options{Workspace: t.TempDir(), MaxConcurrentCalls: 1}, `{}`, b.tool(), quick)
	p.call(t, 1, "block")
	<-b.started
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	select {
	case err := <-b.stopped:
		assert.ErrorIs(t, err, context.Canceled, "the work stops")
	case <-time.After(pipeWait):
		t.Fatal("the cancelled call did not stop")
	}
	p.call(t, 2, "quick")
	m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	assert.Equal(t, "2", string(m.ID), "the next answer is the next call's: nothing for the cancelled one")
}

// memorySink keeps the audit records it is handed.
type memorySink struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (m *memorySink) Append(r audit.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
}

func (m *memorySink) records() []audit.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

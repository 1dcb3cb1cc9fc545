package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/fairshare"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// CodeMetaKey is the _meta key of a tool error's FS_* code, so a program
// reads the code without parsing the text.
const CodeMetaKey = "harness/code"

// newProtocol is the first protocol version whose server-to-client requests
// travel as input-required results (SEP-2322).
const newProtocol = "2026-07-28"

// conn is the state of one connection: its session, fixed on first use.
//
// Calls of one connection run concurrently, up to the process's cap
// (Options.MaxConcurrentCalls), exclusive tools included: what
// exclusivity protects, two mutations of one file interleaving, the backend
// already serializes per target (and guards with versions across
// processes). A client that wants strict ordering awaits each call.
type conn struct {
	mu   sync.Mutex
	sess *session.Session
	seq  atomic.Int64

	// rootsStale is set by notifications/roots/list_changed: the next call
	// asks the client for its roots again.
	rootsStale atomic.Bool

	// issued holds the nonces of approval requests sent on this connection
	// and not yet answered: an answer is accepted once, for the call it was
	// asked for (see approvals).
	issued approvals

	// tempDir is the session's private temp directory (an HTTP principal's
	// session, or any session given one by Options.SessionTemp), removed
	// when the connection ends; nil for none.
	tempDir *sandboxpolicy.SessionTemp

	// leave gives the session's place among its principal's sessions back
	// (HTTPOptions.PrincipalMaxSessions) when the connection ends; nil for
	// none.
	leave func()

	// principal is the session's principal ("" over stdio), for the
	// metrics.
	principal string
}

// connFor returns the state of ss, created on its first call and dropped
// when the connection ends.
func (s *Server) connFor(ss *mcp.ServerSession) *conn {
	if c, ok := s.conns.Load(ss); ok {
		return c.(*conn)
	}
	c, loaded := s.conns.LoadOrStore(ss, &conn{})
	if !loaded {
		go func() {
			_ = ss.Wait()
			s.endConn(c.(*conn))
			s.conns.Delete(ss)
		}()
	}
	return c.(*conn)
}

// endConn ends c's session (its background commands stop) and removes its
// private temp directory; a second call does nothing more.
func (s *Server) endConn(c *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil && s.tracker != nil {
		s.tracker.End(c.sess)
	}
	if c.leave != nil {
		c.leave()
		c.leave = nil
	}
	if c.tempDir != nil {
		if err := c.tempDir.Remove(); err != nil {
			s.log.Warn("a session's temp directory was not removed", zap.String("dir", c.tempDir.Path), zap.Error(err))
		}
		c.tempDir = nil
	}
}

// usesNewProtocol reports whether the connection negotiated 2026-07-28 or
// later (a session set up by server/discover has no initialize parameters).
func usesNewProtocol(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= newProtocol
}

// requestCaps returns which client capabilities a 2026-07-28 request
// declares in its _meta (SEP-2575).
func requestCaps(req *mcp.CallToolRequest) map[string]json.RawMessage {
	raw, err := json.Marshal(req.Params.Meta[mcp.MetaKeyClientCapabilities])
	if err != nil {
		return nil
	}
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(raw, &caps) // absent or malformed: no capabilities
	return caps
}

// canElicit reports whether the client declared elicitation.
func canElicit(req *mcp.CallToolRequest, newProto bool) bool {
	if newProto {
		_, ok := requestCaps(req)["elicitation"]
		return ok
	}
	ip := req.Session.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

// handler runs t for one MCP call.
func (s *Server) handler(t *tool.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := s.connFor(req.Session)
		newProto := usesNewProtocol(req.Session)
		who := s.callerOf(req)
		front := s.front.Load()
		if front != nil && who.http && front.draining.Load() {
			return toResult(tool.ErrorResult("the server is shutting down and takes no new calls; retry on another server or later", CodeShuttingDown)), nil
		}
		s.active.Add(1)
		defer s.active.Add(-1)
		sess, ask := s.session(ctx, c, req, newProto, who)
		if ask != nil {
			if code, _ := ask.Meta[CodeMetaKey].(errcode.Code); code == CodeSessionLimit {
				s.recordRefused(nil, t.Name, clientName(req), who.name, code)
			}
			return ask, nil
		}
		call := slot{q: s.calls, t: s.ticket(who, sess)}
		if res, refused := s.takeSlot(ctx, &call, sess, t.Name, req, who); refused {
			return res, nil
		}
		defer call.release()
		result := t.Handler(session.NewContext(ctx, sess), tool.Call{
			ID:        strconv.FormatInt(c.seq.Add(1), 10),
			Client:    clientName(req),
			Principal: who.name,
			Arguments: req.Params.Arguments,
			Approver:  approver{s: s, c: c, req: req, tool: t.Name, newProto: newProto, slot: &call},
			Progress:  progress(ctx, req),
			Idle: func(ctx context.Context, wait func()) {
				// A call waiting for what has its own cap (a command slot,
				// the command) holds no call slot: reads are not queued
				// behind commands.
				call.release()
				wait()
				_ = call.resume(ctx) // ctx ended: the call returns without a slot
			},
		})
		if ask, ok := errors.AsType[*inputRequired](result.Err); ok {
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{approvalKey: ask.params},
				RequestState:  ask.state,
			}, nil
		}
		return toResult(result), nil
	}
}

// ticket is who a call of who in sess is, for the call slots: over HTTP
// its principal (capped at the principal's max-concurrent-calls, else
// HTTPOptions.PrincipalMaxCalls, and at half the waiting calls) and its
// session; otherwise its session only, uncapped.
func (s *Server) ticket(who caller, sess *session.Session) fairshare.Ticket {
	t := fairshare.Ticket{Sub: sess.ID()}
	front := s.front.Load()
	if front == nil || !who.http {
		return t
	}
	t.Key = "principal:" + who.name
	t.Cap = front.opts.PrincipalMaxCalls
	if who.principal != nil && who.principal.MaxConcurrentCalls > 0 {
		t.Cap = who.principal.MaxConcurrentCalls
	}
	t.MaxWaiting = max(1, s.maxWaiting/2)
	return t
}

// takeSlot acquires sl for a call of the tool named name in sess; when it
// cannot (the queue is full or the wait bound passed: SERVER_BUSY with a
// retry-after hint; ctx ended: FS_ABORTED) it records the refusal and
// returns the call's result and true.
func (s *Server) takeSlot(ctx context.Context, sl *slot, sess *session.Session, name string, req *mcp.CallToolRequest, who caller) (*mcp.CallToolResult, bool) {
	start := time.Now()
	err := sl.acquire(ctx)
	if s.opts.Metrics != nil {
		s.opts.Metrics.SlotWait("call", who.name, time.Since(start))
	}
	if err == nil {
		return nil, false
	}
	res := tool.ErrorResult("the call was cancelled while waiting for a call slot", fs.CodeAborted)
	busy, isBusy := errors.AsType[*fairshare.BusyError](err)
	if isBusy {
		res = tool.ErrorResult("the server is busy: "+busy.Error(), CodeServerBusy)
	}
	s.recordRefused(sess, name, clientName(req), who.name, res.Code)
	out := toResult(res)
	if isBusy {
		out.Meta[RetryAfterMetaKey] = int64(busy.RetryAfter / time.Second)
	}
	return out, true
}

// maxClientName is the number of bytes of a client's name and version a
// call keeps: the client chooses them.
const maxClientName = 200

// clientName returns the name and version of the client that made req
// ("claude-code 2.1.0"; the name alone without a version), as the request's
// _meta says (2026-07-28), else as the client's initialize said
// (mcp.ServerRequest.ClientInfo); cut to maxClientName bytes, "" when
// unknown.
func clientName(req *mcp.CallToolRequest) string {
	info := req.ClientInfo()
	if info == nil {
		return ""
	}
	name := strings.TrimSpace(info.Name + " " + info.Version)
	if len(name) > maxClientName {
		name = strings.ToValidUTF8(name[:maxClientName], "")
	}
	return name
}

// progressEvery is the least time between two progress notifications of one
// call: a streamed read reports every chunk, the client needs far fewer.
const progressEvery = 100 * time.Millisecond

// progress returns the Progress of a call whose client sent a progressToken:
// the first report and then at most one per progressEvery become
// notifications/progress on the call's session, the message included. Nil
// without a token.
func progress(ctx context.Context, req *mcp.CallToolRequest) tool.Progress {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	var last time.Time
	return func(done, total float64, message string) {
		now := time.Now()
		if !last.IsZero() && now.Sub(last) < progressEvery {
			return
		}
		last = now
		// A failed notification (the connection is closing) does not fail
		// the call.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total, Message: message})
	}
}

// approvalBinding is what an approval answer is bound to: the tool, its
// exact arguments, the requested mode and the justification.
func approvalBinding(toolName string, args json.RawMessage, ar sandbox.ApprovalRequest) []byte {
	h := sha256.New()
	for _, part := range []string{toolName, string(args), string(ar.Mode), ar.Justification, ar.Target, ar.Command, ar.Workdir, ar.Operation, ar.Boundary} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// toResult renders a tool result as MCP: the text as one text block, then
// each image as an image block, the structured value whenever the result
// has one (a success's; an error's too where the tool gives one, as exec
// does for a command that timed out or was refused, so a client reads
// timed_out, signal and the partial output), and for errors isError with
// the code in _meta.
func toResult(r tool.Result) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Text}}, IsError: r.IsError}
	for _, img := range r.Images {
		res.Content = append(res.Content, &mcp.ImageContent{MIMEType: img.MIMEType, Data: img.Data})
	}
	if r.Value != nil {
		res.StructuredContent = r.Value
	}
	if r.IsError && r.Code != "" {
		res.Meta = mcp.Meta{CodeMetaKey: r.Code}
	}
	return res
}

// ToResult is toResult for other front ends (the CLI prints the same
// shape).
func ToResult(r tool.Result) *mcp.CallToolResult { return toResult(r) }

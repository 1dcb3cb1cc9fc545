// Package mcpserver serves the tools of the fx "tools" group over MCP with
// the official Go SDK. One connection is one session: its working directory
// is fixed when the session is first used (the configured workspace, else
// the client's first file:// root, else the process working directory), and
// its workspace roots follow the client's roots (see Server.session). The approver of the tools is MCP elicitation, in both
// protocol generations the SDK speaks: an in-handler elicitation request for
// clients that negotiated 2025-11-25 or earlier, and an input-required
// result the client answers by retrying the call for 2026-07-28 sessions.
//
// Build a Server with New (Module does, in an fx application) and serve each
// connection with Run: over StdioTransport for `harness serve`, or any
// mcp.Transport; or serve many sessions over Streamable HTTP with
// HTTPHandler (`harness serve --listen`, issue 26), where each MCP session
// is isolated as a connection is, its principal (the bearer token's
// subject) owns its workspaces and modes, and no session falls back to the
// process working directory.
package mcpserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/fairshare"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// Name is the server's MCP implementation name.
const Name = "harness"

// Options configure a Server.
type Options struct {
	// Version is reported to clients.
	Version string
	// Metrics, when set, gets each call's wait for a call slot (issue 39).
	Metrics *metrics.Metrics
	// Workspace, when set, is every session's working directory and only
	// workspace root; the client's roots are then never asked for.
	Workspace string
	// RootsTimeout bounds the wait for a client's answer to roots/list;
	// zero means DefaultRootsTimeout. Past it the session falls back to
	// the process working directory (logged).
	RootsTimeout time.Duration
	// MaxConcurrentCalls caps the tool calls running at once in the
	// process, over all connections; zero or less means four times
	// GOMAXPROCS, at least 8. Beyond it calls wait for a slot, served
	// round-robin between principals (HTTP) and between sessions; a call
	// waiting for the user's approval, or for a command, holds no slot.
	MaxConcurrentCalls int
	// MaxWaitingCalls bounds the calls waiting for a slot at once over the
	// process (one HTTP principal's at half of it); beyond it a call fails
	// at once with CodeServerBusy. Zero or less means 64 per slot.
	MaxWaitingCalls int
	// CallWait bounds how long a call waits for a slot before it fails
	// with CodeServerBusy; zero or less means DefaultCallWait.
	CallWait time.Duration
	// SessionTemp, when set, is the directory (the first temp root) in
	// which each session without a principal gets a temp area of its own,
	// mode 0700, its only temp root, removed when its connection ends
	// (issue 34); "" leaves such sessions the policy's temp roots
	// (--shared-temp). A principal's session has HTTPOptions.TempDir.
	SessionTemp string
	// Sink, when set, receives the audit record of each call the server
	// refuses before its tool runs (SERVER_BUSY, or cancelled while it
	// waited for a slot); the tools' guard records every other call.
	// Module sets it from the application's optional audit.Sink.
	Sink audit.Sink
}

// Server adapts tools to MCP. It is safe for concurrent use by many
// connections.
type Server struct {
	opts  Options
	tools []*tool.Tool
	log   *zap.Logger
	mcp   *mcp.Server

	conns      sync.Map         // *mcp.ServerSession -> *conn
	tracker    *session.Tracker // starts sessions when set
	key        []byte           // signs approval request states
	calls      *fairshare.Queue // the process's call slots
	maxWaiting int              // the calls that may wait for one
	logs       *clientLogs      // the sessions that asked for log records

	front  atomic.Pointer[HTTPHandler] // the HTTP front end, when one serves
	active atomic.Int64                // tool calls running (Drain waits for 0)
}

// New builds the MCP server over tools (served sorted by name); Module
// builds it with New too. opts.Version "" reports "dev". log is the
// server's own logger (nil: none); its records also reach the clients that
// set a log level, and when log is Module's decorated logger, every record
// of the process does. tracker, when non-nil, starts each connection's
// session and ends it when the connection ends; nil makes untracked
// sessions (session.New).
//
// Serve a connection with Run (or connect MCP() to any mcp.Transport). The
// error is non-nil, and no server is built, when a tool cannot be served: a
// nil tool or handler, an empty or repeated name, a nil input schema or one
// whose type is not "object".
func New(opts Options, tools []*tool.Tool, log *zap.Logger, tracker *session.Tracker) (*Server, error) {
	log = cmp.Or(log, zap.NewNop())
	logs := forwardedTo(log)
	if logs == nil {
		logs = newClientLogs()
		log = logs.tee(log)
	}
	if err := servable(tools); err != nil {
		return nil, err
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand never fails on Linux
	s := &Server{
		opts: opts, tools: tool.Sorted(tools), log: log.Named("mcp"), key: key,
		logs: logs, tracker: tracker,
	}
	s.calls, s.maxWaiting = newCallQueue(opts)
	// The instructions name the tools served, so they stay true.
	var files, commands []string
	for _, t := range s.tools {
		if t.Name == "exec" || strings.HasPrefix(t.Name, "exec_") {
			commands = append(commands, t.Name)
			continue
		}
		files = append(files, t.Name)
	}
	instructions := "Filesystem tools: " + strings.Join(files, ", ") + ". Writes are fenced by the sandbox mode; read a file before you overwrite or edit it."
	if len(commands) > 0 {
		instructions += " Shell commands: " + strings.Join(commands, ", ") + ", under the same sandbox mode."
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: Name, Title: "harness: fenced filesystem tools", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		// Roots are deprecated from 2026-07-28 (SEP-2577) but are how
		// 2025-11-25 clients name their workspace; they stay served.
		RootsListChangedHandler: func(_ context.Context, req *mcp.RootsListChangedRequest) { //nolint:staticcheck // SEP-2577: see above
			s.connFor(req.Session).rootsStale.Store(true)
		},
	})
	s.mcp.AddReceivingMiddleware(s.validateSetLevel)
	for _, t := range s.tools {
		s.mcp.AddTool(mcpTool(t), s.handler(t))
	}
	return s, nil
}

// servable returns why tools cannot be served, nil when they can: what the
// SDK's AddTool would panic on, and what would make one name two tools.
func servable(tools []*tool.Tool) error {
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		switch {
		case t == nil:
			return fmt.Errorf("mcpserver: tool %d is nil", i)
		case t.Name == "":
			return fmt.Errorf("mcpserver: tool %d has no name", i)
		case seen[t.Name]:
			return fmt.Errorf("mcpserver: two tools are named %q", t.Name)
		case t.Handler == nil:
			return fmt.Errorf("mcpserver: tool %q has no handler", t.Name)
		case t.InputSchema == nil || t.InputSchema.Type != "object":
			return fmt.Errorf(`mcpserver: tool %q: its input schema must have type "object"`, t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// Sessions returns the live sessions by principal ("" over stdio): the
// connections whose session has started and not ended (issue 39).
func (s *Server) Sessions() map[string]int {
	out := map[string]int{}
	s.conns.Range(func(_, v any) bool {
		c := v.(*conn)
		c.mu.Lock()
		if c.sess != nil {
			select {
			case <-c.sess.Done():
			default:
				out[c.principal]++
			}
		}
		c.mu.Unlock()
		return true
	})
	return out
}

// MCP returns the underlying SDK server (for other transports and tests).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one connection over t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		if werr := <-closed; werr != nil {
			s.log.Debug("the session ended with an error once stopped", zap.Error(werr))
		}
		err = ctx.Err()
	case err = <-closed:
	}
	// The connection's end is also seen by a goroutine of its own
	// (connFor), which the process's exit would not wait for: the session
	// ends, and its temp area goes, before Run returns.
	if c, ok := s.conns.Load(ss); ok {
		s.endConn(c.(*conn))
	}
	return err
}

// mcpTool is the MCP declaration of t: schemas (no outputSchema when t has
// none), and annotations (readOnlyHint on read-only tools, destructiveHint
// on the others, openWorldHint false).
func mcpTool(t *tool.Tool) *mcp.Tool {
	destructive, openWorld := t.Annotations.Destructive, false
	d := &mcp.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: t.InputSchema,
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.Annotations.ReadOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.Annotations.Idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
	if t.OutputSchema != nil {
		// A nil *jsonschema.Schema in the interface would be a schema the
		// SDK refuses; a tool without one declares none.
		d.OutputSchema = t.OutputSchema
	}
	return d
}

// Tools returns the MCP declarations of the served tools, sorted by name
// (what `harness tools` prints).
func (s *Server) Tools() []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, mcpTool(t))
	}
	return out
}

// Params are the fx inputs of Module.
type Params struct {
	fx.In

	Options Options
	Tools   tool.Group
	Tracker *session.Tracker `optional:"true"`
	// Logger is the application's, decorated by Module: New finds in it the
	// sessions it forwards to.
	Logger *zap.Logger `optional:"true"`
	// Sink receives the audit record of each call the server refuses
	// before its tool runs (SERVER_BUSY, cancelled while queued).
	Sink audit.Sink `optional:"true"`
}

// Module provides the *Server over the "tools" group (each call it serves
// carries its own approver, which asks the calling connection's user through
// elicitation), and decorates the application's *zap.Logger so that every record also
// reaches the clients that set a log level (logging/setLevel), at that
// level or above; stderr logging is unchanged. Mount it at the root of the
// application, so the decoration covers every module.
var Module = fx.Options(
	fx.Module("mcpserver",
		fx.Provide(
			func(p Params) (*Server, error) {
				if p.Options.Sink == nil {
					p.Options.Sink = p.Sink
				}
				return New(p.Options, p.Tools.Tools, p.Logger, p.Tracker)
			},
			newClientLogs,
		),
	),
	fx.Decorate(func(log *zap.Logger, logs *clientLogs) *zap.Logger { return logs.tee(log) }),
)

// processCwd is the fallback working directory of a session, "" when it
// cannot be known or is "/": the session then has no cwd and the configured
// fallback workspace root applies (never "/", which would make
// workspace-write as wide as the whole volume).
func processCwd() string {
	wd, err := os.Getwd()
	if err != nil || sandboxpolicy.CanonicalPath(wd) == "/" {
		return ""
	}
	return wd
}

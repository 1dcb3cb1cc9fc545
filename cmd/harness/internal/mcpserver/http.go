package mcpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/httpauth"
	"github.com/dsh-go/harness/services/principal"
	"github.com/dsh-go/harness/services/sandbox"
)

// Paths the HTTP front end serves.
const (
	// EndpointPath is the MCP endpoint (Streamable HTTP).
	EndpointPath = "/mcp"
	// HealthPath answers "ok" to anyone: liveness and readiness probes.
	HealthPath = "/healthz"
	// MetricsPath serves HTTPOptions.Metrics.
	MetricsPath = "/metrics"
)

// CodeShuttingDown is the code of the tool error a call gets when it
// arrives while the server drains its calls before it stops.
const CodeShuttingDown errcode.Code = "SERVER_SHUTTING_DOWN"

// HTTPOptions configure the Streamable HTTP front end (HTTPHandler).
type HTTPOptions struct {
	// Metrics, when set, is served at MetricsPath behind the endpoint's
	// checks: the Host and Origin checks, Authenticate and, with
	// Principals, a configured principal's token (issue 39).
	Metrics http.Handler
	// Authenticate wraps the MCP endpoint: it answers a request without a
	// valid bearer token itself (401 with WWW-Authenticate) and passes the
	// others on with the token's *auth.TokenInfo in their context
	// (services/httpauth). Nil serves without authentication: loopback
	// only, which the caller checks.
	Authenticate func(http.Handler) http.Handler
	// Metadata serves the protected-resource metadata document (RFC 9728)
	// at httpauth.MetadataPath and httpauth.MetadataPath+EndpointPath; nil
	// serves none.
	Metadata http.Handler
	// Principals maps each token subject to its workspaces and modes
	// (--principals). Nil: every session gets the server's workspace and
	// mode. Set: a subject it does not name is refused with 403, and a
	// session of one it names has its principal's workspaces (narrowed by
	// the client's roots, Principal.Narrow), starts in its standing mode
	// and may never be granted more than its widest (a session ceiling).
	Principals *principal.Set
	// Mode is the server's --mode, from which a principal's standing and
	// widest modes default (Principal.StandingMode, Principal.Widest).
	Mode sandbox.Mode
	// TempDir is where each session of a principal gets a private temp
	// directory (mode 0700, removed when the session ends), its only temp
	// root and its commands' TMPDIR in place of the shared ones; "" gives
	// such sessions no temp area.
	TempDir string
	// AllowedHosts are the Host header values served, each a host (any
	// port) or host:port, compared case-insensitively; empty serves any
	// Host. Anything else gets 403 (DNS rebinding).
	AllowedHosts []string
	// AllowedOrigins are the browser origins served (lower-case
	// scheme://host[:port]) besides the server's own on loopback (for a
	// request that arrived on a loopback address: its scheme, localhost,
	// 127.0.0.1 or [::1], and the port it arrived on);
	// a request with another Origin header, or "null", gets 403. A request
	// without Origin (not from a browser) is served.
	AllowedOrigins []string
	// SessionIdle closes a session that sent no request for so long; zero
	// means none.
	SessionIdle time.Duration
	// MaxRequestBytes caps a request body (413 beyond); zero means
	// MinMaxLineBytes. One principal's requests over 64 KiB may hold at
	// most twice this in flight together; beyond it, after a second's
	// wait, 429.
	MaxRequestBytes int64
	// BodyTimeout is how long a request's body may take to arrive: a
	// client that trickles one is cut off rather than holding a
	// connection; zero means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// PrincipalMaxCalls caps the calls one principal (the anonymous one
	// too) runs at once; zero or less means half the process's cap
	// (Options.MaxConcurrentCalls), at least 1. Beyond it the principal's
	// calls wait with the others, round-robin between principals, at most
	// half of Options.MaxWaitingCalls of them at once.
	PrincipalMaxCalls int
	// PrincipalMaxSessions caps the sessions one principal (the anonymous
	// one too) has at once in this server; a session past it is refused at
	// its first call with CodeSessionLimit until one of the principal's
	// sessions ends. Zero or less means none.
	PrincipalMaxSessions int
}

// CodeSessionLimit is the code of the tool error a call of a new session
// gets when its principal already has HTTPOptions.PrincipalMaxSessions
// sessions: the message names the cap and the flag that raises it
// (--principal-max-sessions). The session gets no state; a later call
// tries again.
const CodeSessionLimit errcode.Code = "PRINCIPAL_SESSION_LIMIT"

// HTTPHandler serves MCP over Streamable HTTP: one MCP session per
// Mcp-Session-Id, each isolated as a stdio connection is (its own roots,
// policy, grants, read-before-write state, background commands, audit
// session), approvals asked on the session's stream. It is an
// http.Handler; Drain stops it taking new work.
type HTTPHandler struct {
	s        *Server
	opts     HTTPOptions
	mcp      http.Handler
	draining atomic.Bool

	mu       sync.Mutex
	bodies   map[string]*semaphore.Weighted // principal name -> its request bytes in flight
	sessions map[string]int                 // principal name -> its sessions (PrincipalMaxSessions)

	inflight inflight // the calls whose POST is open, and which of them the client cancelled
}

// admitSession counts a new session of the principal named name and
// returns the func that uncounts it; when the principal is at
// PrincipalMaxSessions it counts nothing and returns the refusal's message.
func (h *HTTPHandler) admitSession(name string) (func(), string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.opts.PrincipalMaxSessions; n > 0 && h.sessions[name] >= n {
		return nil, "principal " + strconv.Quote(name) + " already has " + strconv.Itoa(h.sessions[name]) +
			" sessions on this server, its cap (--principal-max-sessions " + strconv.Itoa(n) +
			"); end one (close its client), or have the server's operator raise --principal-max-sessions"
	}
	h.sessions[name]++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.sessions[name]--; h.sessions[name] <= 0 {
				delete(h.sessions, name)
			}
		})
	}, ""
}

// bodyBudgetRequests is how many requests of the largest size one
// principal may have in flight at once: a decoded body costs several times
// its size in memory, so the bytes in flight are capped per principal.
const bodyBudgetRequests = 2

// admitBody takes the request's declared body size (MaxRequestBytes when
// unknown) from the budget of principal name, waiting up to a second, and
// returns the func that gives it back; false when the budget stays spent
// (the caller answers 429).
func (h *HTTPHandler) admitBody(r *http.Request, name string) (func(), bool) {
	n := r.ContentLength
	if n < 0 || n > h.opts.MaxRequestBytes {
		n = h.opts.MaxRequestBytes
	}
	if n < 64<<10 {
		// Small requests (every call but a large write) are not counted.
		return func() {}, true
	}
	h.mu.Lock()
	sem, ok := h.bodies[name]
	if !ok {
		sem = semaphore.NewWeighted(bodyBudgetRequests * h.opts.MaxRequestBytes)
		h.bodies[name] = sem
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if err := sem.Acquire(ctx, n); err != nil {
		return nil, false
	}
	return func() { sem.Release(n) }, true
}

// HTTPHandler returns the Streamable HTTP front end of s (issue 26): the
// MCP endpoint at EndpointPath (the go-sdk's handler, sessions on), the
// health probe at HealthPath and the metadata document. Requests pass, in
// order: the Host check, the Origin check, the body cap, authentication,
// the principal check, then the SDK. Protocol: the 2025-11-25 era and
// earlier; a 2026-07-28 request is answered with the SDK's unsupported
// version error, from which a client of that era falls back (SEP-2575),
// since a per-agent state needs the session the 2026-07-28 era drops.
// One Server has at most one HTTP front end: a second call replaces the
// first's settings for the calls that follow.
func (s *Server) HTTPHandler(opts HTTPOptions) *HTTPHandler {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = MinMaxLineBytes
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.PrincipalMaxCalls <= 0 {
		// Half the process's slots: one principal's flood leaves the
		// other half to the others.
		opts.PrincipalMaxCalls = max(1, s.calls.Slots()/2)
	}
	h := &HTTPHandler{
		s: s, opts: opts, bodies: map[string]*semaphore.Weighted{}, sessions: map[string]int{},
		inflight: inflight{calls: map[callKey]bool{}},
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      opts.SessionIdle,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		// The Host check below is this one's superset, with the
		// configured names.
		DisableLocalhostProtection: len(opts.AllowedHosts) > 0,
	})
	var endpoint http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.draining.Load() && r.Header.Get("Mcp-Session-Id") == "" {
			w.Header().Set("Retry-After", "5")
			http.Error(w, "the server is shutting down", http.StatusServiceUnavailable)
			return
		}
		name := ""
		ti := auth.TokenInfoFromContext(r.Context())
		if ti != nil {
			name = ti.UserID
		}
		release, ok := h.admitBody(r, name)
		if !ok {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many large requests of this principal at once; retry", http.StatusTooManyRequests)
			return
		}
		defer release()
		if opts.Principals != nil {
			if ti == nil {
				http.Error(w, "no authenticated subject", http.StatusUnauthorized)
				return
			}
			if _, ok := opts.Principals.Lookup(ti.UserID); !ok {
				s.log.Warn("a token's subject is no principal", zap.String("principal", ti.UserID))
				http.Error(w, "the token's subject is not a configured principal", http.StatusForbidden)
				return
			}
		}
		h.serveSDK(sdk, w, r)
	})
	if opts.Authenticate != nil {
		inner := endpoint
		authed := opts.Authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Authenticated: the SDK gets the server's own writer back.
			if rw, ok := w.(*refusalWriter); ok {
				w = rw.ResponseWriter
			}
			inner.ServeHTTP(w, r)
		}))
		endpoint = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			authed.ServeHTTP(&refusalWriter{ResponseWriter: w}, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle(EndpointPath, endpoint)
	if opts.Metrics != nil {
		mux.Handle(MetricsPath, h.authenticated(opts.Metrics))
	}
	if opts.Metadata != nil {
		mux.Handle(httpauth.MetadataPath, opts.Metadata)
		mux.Handle(httpauth.MetadataPath+EndpointPath, opts.Metadata)
	}
	h.mcp = mux
	s.front.Store(h)
	return h
}

// serveSDK passes an admitted request to the SDK's handler, keeping the
// promises it does not (httpproto.go): an unspoken protocol version is
// refused with the versions spoken; a POST without a session id other than
// initialize gets 400 with a JSON-RPC Invalid Request error (-32600); a
// call the client cancels (notifications/cancelled) gets no response.
func (h *HTTPHandler) serveSDK(sdk http.Handler, w http.ResponseWriter, r *http.Request) {
	if versionRefused(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		sdk.ServeHTTP(w, r)
		return
	}
	in, ok := readInbound(r, h.opts.MaxRequestBytes)
	if !ok {
		sdk.ServeHTTP(w, r)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		if !in.initialize && r.Header.Get("Mcp-Protocol-Version") < newProtocol {
			writeRPCError(w, http.StatusBadRequest, in.firstID, jsonrpc.CodeInvalidRequest, errNoSession)
			return
		}
		sdk.ServeHTTP(w, r)
		return
	}
	// A cancellation is recorded before the SDK reads it, so the
	// response its call then makes finds it.
	h.inflight.cancel(sid, in.cancels)
	if len(in.calls) > 0 {
		defer h.inflight.open(sid, in.calls)()
		w = &dropCancelled{ResponseWriter: w, sid: sid, f: &h.inflight}
	}
	sdk.ServeHTTP(w, r)
}

// DefaultBodyTimeout is how long a request's body may take to arrive when
// HTTPOptions.BodyTimeout is zero.
const DefaultBodyTimeout = 2 * time.Minute

// deadlineBody lifts the connection's read deadline once the body has been
// read to its end; a body that failed (the deadline passed) keeps it, so
// the server drops the connection instead of waiting for the rest.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// authenticated wraps next in the endpoint's authentication: a valid
// token (Authenticate) and, with Principals, one of a configured principal.
func (h *HTTPHandler) authenticated(next http.Handler) http.Handler {
	checked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rw, ok := w.(*refusalWriter); ok {
			w = rw.ResponseWriter
		}
		if h.opts.Principals != nil {
			ti := auth.TokenInfoFromContext(r.Context())
			if ti == nil {
				http.Error(w, "no authenticated subject", http.StatusUnauthorized)
				return
			}
			if _, ok := h.opts.Principals.Lookup(ti.UserID); !ok {
				http.Error(w, "the token's subject is not a configured principal", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	if h.opts.Authenticate == nil {
		return checked
	}
	authed := h.opts.Authenticate(checked)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authed.ServeHTTP(&refusalWriter{ResponseWriter: w}, r)
	})
}

// refusalWriter closes the connection after a refusal (a status of 400 or
// more) of the authentication: the server then does not wait for the rest
// of an unauthenticated body to reuse the connection.
type refusalWriter struct {
	http.ResponseWriter
}

func (w *refusalWriter) WriteHeader(code int) {
	if code >= http.StatusBadRequest {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.Body != nil && r.Body != http.NoBody {
		// A body must arrive within BodyTimeout, whoever sends it (a
		// refused request's too, which the server would otherwise wait
		// for to reuse the connection); the deadline is lifted once it
		// has, so a call's answer may stream on.
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(h.opts.BodyTimeout)); err == nil {
			// On a copy of the request: the server's own copy keeps its
			// body, by which it decides, when a handler answers without
			// reading it all, whether to drain it or close.
			r = r.WithContext(r.Context())
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		} else {
			h.s.log.Warn("a request body gets no read deadline", zap.Error(err))
		}
	}
	if r.URL.Path == HealthPath {
		// Probes come with the pod's address as their Host.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	if !h.hostAllowed(r.Host) {
		w.Header().Set("Connection", "close")
		http.Error(w, "Forbidden: the Host header names no served host", http.StatusForbidden)
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" {
		if !slices.Contains(h.opts.AllowedOrigins, strings.ToLower(origin)) && !ownOrigin(r, origin) {
			w.Header().Set("Connection", "close")
			http.Error(w, "Forbidden: the Origin is not allowed", http.StatusForbidden)
			return
		}
		cors(w, origin)
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	h.mcp.ServeHTTP(w, r)
}

// cors answers an allowed origin's browser: what it may send and read.
func cors(w http.ResponseWriter, origin string) {
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Add("Vary", "Origin")
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-Id")
	w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate")
}

// hostAllowed reports whether a request's Host header names a served host.
func (h *HTTPHandler) hostAllowed(hostport string) bool {
	if len(h.opts.AllowedHosts) == 0 {
		return true
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	for _, a := range h.opts.AllowedHosts {
		ah, ap, err := net.SplitHostPort(a)
		if err != nil {
			ah, ap = a, ""
		}
		if strings.EqualFold(strings.Trim(ah, "[]"), host) && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}

// Drain stops the front end taking new work: a request that would start a
// session gets 503, a new call SERVER_SHUTTING_DOWN; requests of open
// sessions (an approval's answer) are still served. It returns once no
// call runs, or with ctx's error when ctx ends first.
func (h *HTTPHandler) Drain(ctx context.Context) error {
	h.draining.Store(true)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for h.s.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// CloseSessions ends every session the front end serves, as their
// connections ending would (their background commands stop, their private
// temp directories are removed), before it returns: what a stopping server
// does once Drain is done.
func (h *HTTPHandler) CloseSessions() {
	h.s.conns.Range(func(k, v any) bool {
		h.s.endConn(v.(*conn))
		_ = k.(*mcp.ServerSession).Close()
		return true
	})
}

// caller is who made an MCP call: over HTTP, the principal's name (the
// token subject, "" unauthenticated) and its Principal when the front end
// maps subjects.
type caller struct {
	http      bool
	name      string
	principal *principal.Principal
}

// callerOf returns who made req.
func (s *Server) callerOf(req *mcp.CallToolRequest) caller {
	if req.Extra == nil || req.Extra.Header == nil {
		return caller{}
	}
	c := caller{http: true}
	if req.Extra.TokenInfo != nil {
		c.name = req.Extra.TokenInfo.UserID
	}
	if h := s.front.Load(); h != nil && h.opts.Principals != nil {
		c.principal, _ = h.opts.Principals.Lookup(c.name)
	}
	return c
}

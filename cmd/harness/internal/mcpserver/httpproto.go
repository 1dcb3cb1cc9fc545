package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where the front end keeps the promises of the Streamable HTTP transport
// the SDK's handler does not (issue 36): the true version list, the 400
// for a request without a session, no response to a cancelled request,
// and the server's own origin served.

// httpVersions are the protocol versions the HTTP front end speaks,
// newest first: the SDK's, less the 2026-07-28 era, which needs a
// stateless front end (see Server.HTTPHandler).
var httpVersions = slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= newProtocol })

// versionRefused answers 400 when r's Mcp-Protocol-Version header names a
// version of the 2025-11-25 era or earlier that the front end does not
// speak, listing the ones it does (the SDK's own answer lists 2026-07-28
// too); it reports whether it answered. A 2026-07-28 or later version goes
// on to the SDK, whose error a client of that era falls back from.
func versionRefused(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == "" || v >= newProtocol || slices.Contains(httpVersions, v) {
		return false
	}
	http.Error(w, "Bad Request: Unsupported protocol version (supported versions: "+strings.Join(httpVersions, ",")+")", http.StatusBadRequest)
	return true
}

// errNoSession is the message of the 400 a request without a session id
// gets, other than initialize.
const errNoSession = "Bad Request: an Mcp-Session-Id header is required: send initialize first, then the session id it answers with on every request"

// inbound is what a POST body carries: the ids of its calls, the ids its
// cancellations name, whether it is an initialize request, and the first
// message's id (null when none).
type inbound struct {
	calls      []jsonrpc.ID
	cancels    []jsonrpc.ID
	initialize bool
	firstID    jsonrpc.ID
}

// readInbound reads r's body (at most limit bytes) and puts it back for the
// SDK; ok is false when the body is over limit or not JSON-RPC, which the
// SDK then refuses itself.
func readInbound(r *http.Request, limit int64) (in inbound, ok bool) {
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
	if err != nil || int64(len(data)) > limit {
		return in, false
	}
	var raws []json.RawMessage
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &raws) != nil {
			return in, false
		}
	} else {
		raws = []json.RawMessage{t}
	}
	for i, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return in, false
		}
		req, isReq := msg.(*jsonrpc.Request)
		if !isReq {
			continue
		}
		if i == 0 {
			in.firstID = req.ID
			in.initialize = len(raws) == 1 && req.Method == "initialize"
		}
		if req.IsCall() {
			in.calls = append(in.calls, req.ID)
			continue
		}
		if req.Method != "notifications/cancelled" {
			continue
		}
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			continue
		}
		if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
			in.cancels = append(in.cancels, id)
		}
	}
	return in, true
}

// writeRPCError answers status with a JSON-RPC error response of id
// ("id": null when id is not valid, as JSON-RPC asks when the request's id
// is unknown).
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, message string) {
	data, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id.Raw(), &jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		http.Error(w, message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// callKey names one call of one session.
type callKey struct {
	session string
	id      any
}

// inflight are the calls of every session whose POST is still open; true
// marks one the client cancelled, whose response is not sent.
type inflight struct {
	mu    sync.Mutex
	calls map[callKey]bool
}

// open records the calls of session sid and returns the func that forgets
// them once their POST is done.
func (f *inflight) open(sid string, ids []jsonrpc.ID) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		f.calls[callKey{sid, id.Raw()}] = false
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, id := range ids {
			delete(f.calls, callKey{sid, id.Raw()})
		}
	}
}

// cancel marks the calls of session sid named by ids as cancelled; an id
// with no open call is ignored (it was answered already).
func (f *inflight) cancel(sid string, ids []jsonrpc.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		k := callKey{sid, id.Raw()}
		if _, ok := f.calls[k]; ok {
			f.calls[k] = true
		}
	}
}

// cancelled reports whether the client cancelled call id of session sid.
func (f *inflight) cancelled(sid string, id jsonrpc.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[callKey{sid, id.Raw()}]
}

// dropCancelled is a POST's response writer that leaves out the response
// to a call its session cancelled: on an event stream, the SDK writes each
// event with one Write ("event: message\n[id: ...\n]data: <message>\n\n"),
// and one whose message is a response to a cancelled call is dropped; the
// stream then ends as if it had been sent.
type dropCancelled struct {
	http.ResponseWriter
	sid string
	f   *inflight
}

func (d *dropCancelled) Write(p []byte) (int, error) {
	if strings.HasPrefix(d.Header().Get("Content-Type"), "text/event-stream") {
		if id, ok := responseID(p); ok && d.f.cancelled(d.sid, id) {
			return len(p), nil
		}
	}
	return d.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the server's writer (to flush, to
// set deadlines).
func (d *dropCancelled) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// responseID returns the id of the JSON-RPC response an SSE event carries;
// false when it carries none.
func responseID(event []byte) (jsonrpc.ID, bool) {
	for line := range bytes.SplitSeq(event, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return jsonrpc.ID{}, false
		}
		return resp.ID, true
	}
	return jsonrpc.ID{}, false
}

// ownOrigin reports whether origin is the server's own, for a request that
// arrived on a loopback address: the request's scheme, a loopback name
// (localhost, 127.0.0.1, [::1]) and the port it arrived on. A page of that
// origin was served from this machine's loopback at this port, by the
// server itself, so DNS rebinding cannot produce it.
func ownOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Path != "" || u.Port() == "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !strings.EqualFold(u.Scheme, scheme) {
		return false
	}
	lhost, port, err := net.SplitHostPort(local.String())
	if lip := net.ParseIP(lhost); err != nil || lip == nil || !lip.IsLoopback() || u.Port() != port {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

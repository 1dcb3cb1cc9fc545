package netproxy

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"
)

// connectEstablished is the reply that opens a CONNECT tunnel.
const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// ServeHTTP serves one proxy request: CONNECT opens a tunnel, an
// absolute-form http:// request is forwarded; anything else is 400.
// A refused host is 403, a host that cannot be resolved or reached 502,
// each with a one-line plain-text body that starts "harness: ".
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		// Not an empty 200, which a CONNECT client would take as a tunnel.
		http.Error(w, "harness: the network proxy is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer s.leave()
	if r.Method == http.MethodConnect {
		s.connect(w, r)
		return
	}
	s.forward(w, r)
}

// connect serves CONNECT host:port with a raw tunnel to the checked
// address; bytes the client sent after its request head are passed on.
func (s *server) connect(w http.ResponseWriter, r *http.Request) {
	host, portText, err := net.SplitHostPort(r.Host)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		http.Error(w, "harness: CONNECT needs host:port, got "+strconv.Quote(r.Host), http.StatusBadRequest)
		return
	}
	v := s.judge(r.Context(), viaConnect, host, port)
	if !s.answerRefusal(w, v) {
		return
	}
	upstream, err := s.dial(r.Context(), v)
	if err != nil {
		s.logDial(viaConnect, v, err)
		http.Error(w, "harness: network access to "+v.host+" failed: "+err.Error(), http.StatusBadGateway)
		return
	}
	client, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = upstream.Close()
		http.Error(w, "harness: cannot open a tunnel on this connection", http.StatusInternalServerError)
		return
	}
	_ = client.SetDeadline(time.Time{})
	early, _ := buffered.Peek(buffered.Reader.Buffered())
	if _, err := client.Write([]byte(connectEstablished)); err != nil || writeAll(upstream, early) != nil {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	s.tunnel(client, upstream)
}

// writeAll writes b (nothing when empty).
func writeAll(c net.Conn, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := c.Write(b)
	return err
}

// forward serves an absolute-form request through a transport whose only
// dial is to the checked address; each request has its own upstream
// connection, closed with the response.
func (s *server) forward(w http.ResponseWriter, r *http.Request) {
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "harness: this is a proxy: send an absolute-form request (GET http://host/...) or CONNECT", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, "harness: the proxy forwards http:// URLs only; use CONNECT for "+strconv.Quote(r.URL.Scheme), http.StatusBadRequest)
		return
	}
	port := 80
	if p := r.URL.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			http.Error(w, "harness: bad port "+strconv.Quote(p), http.StatusBadRequest)
			return
		}
		port = n
	}
	v := s.judge(r.Context(), viaHTTP, r.URL.Hostname(), port)
	if !s.answerRefusal(w, v) {
		return
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := s.dial(ctx, v)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Host = "" },
		Transport: tr,
		ErrorLog:  debugStdLog(s.log),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			s.logDial(viaHTTP, v, err)
			http.Error(w, "harness: network access to "+v.host+" failed: "+err.Error(), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// answerRefusal answers a verdict that is not allowed (403 refused, 502
// failed) and reports whether the request may go on.
func (s *server) answerRefusal(w http.ResponseWriter, v verdict) bool {
	switch v.outcome {
	case refused:
		http.Error(w, v.message(), http.StatusForbidden)
	case failed:
		http.Error(w, v.message(), http.StatusBadGateway)
	default:
		return true
	}
	return false
}

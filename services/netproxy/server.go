package netproxy

import (
	"bufio"
	"context"
	"errors"
	stdlog "log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// socksVersion is the first byte of every SOCKS5 connection; an HTTP
// request starts with a method name, never with it.
const socksVersion = 0x05

// Accept's back-off on a transient error (out of descriptors), as
// net/http does it.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// server is one Serve call: its listener, the session it serves, the
// connections it holds and the goroutines it started.
type server struct {
	p        *Proxy
	ln       net.Listener
	session  string
	grants   Grants
	onRefuse func(host string, port int, reason string)
	log      *zap.Logger
	// direct, when set, is the one destination of every connection
	// (ServeDirect).
	direct *target

	// ctx is cancelled when the server stops: lookups, dials and request
	// contexts derive from it.
	ctx    context.Context
	cancel context.CancelFunc
	// slots holds one token per client connection (maxConns).
	slots chan struct{}
	// handoff passes the connections that speak HTTP to httpSrv.
	handoff *handoffListener
	httpSrv *http.Server

	stopping atomic.Bool
	mu       sync.Mutex
	closing  bool
	conns    map[*conn]struct{}
	// active counts connection goroutines and HTTP handlers.
	active sync.WaitGroup
}

func newServer(p *Proxy, ln net.Listener, session string, grants Grants, onRefuse func(string, int, string)) *server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{
		p: p, ln: ln, session: session, grants: grants, onRefuse: onRefuse,
		log: p.log.With(zap.String("session", session)),
		ctx: ctx, cancel: cancel,
		slots:   make(chan struct{}, p.limits.conns),
		handoff: newHandoffListener(ln.Addr()),
		conns:   make(map[*conn]struct{}),
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: p.limits.header,
		IdleTimeout:       p.limits.keepAlive,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          debugStdLog(p.log),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	return s
}

// run is the accept loop, then the shutdown.
func (s *server) run() error {
	httpDone := make(chan struct{})
	go func() {
		defer close(httpDone)
		_ = s.httpSrv.Serve(s.handoff)
	}()
	err := s.acceptLoop()
	if s.stopping.Load() {
		err = nil
	}
	s.shutdown()
	<-httpDone
	return err
}

func (s *server) acceptLoop() error {
	delay := time.Duration(0)
	for {
		// Accept, then wait for a slot holding the connection: a loop that
		// took a slot before it accepted would keep it while its listener
		// is idle, and servers sharing slots (ServeDirect's) could hold
		// them all waiting while another's connection waits for one.
		raw, err := s.ln.Accept()
		if err != nil {
			if !transientAcceptError(err) || s.stopping.Load() {
				return err
			}
			delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
			s.log.Debug("accept failed; retrying", zap.Error(err), zap.Duration("delay", delay))
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return net.ErrClosed
			}
			continue
		}
		delay = 0
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			_ = raw.Close()
			return net.ErrClosed
		}
		c := &conn{Conn: raw, br: bufio.NewReader(raw)}
		c.onClose = func() { s.untrack(c); <-s.slots }
		if !s.enter() {
			_ = c.Close()
			return net.ErrClosed
		}
		if !s.track(c) {
			_ = c.Close()
			s.leave()
			return net.ErrClosed
		}
		go s.serveConn(c)
	}
}

// transientAcceptError reports whether Accept may succeed when retried.
func transientAcceptError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// serveConn tells SOCKS5 from HTTP by the first byte and serves c.
func (s *server) serveConn(c *conn) {
	defer s.leave()
	if s.direct != nil {
		s.serveDirect(c)
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(s.p.limits.header))
	first, err := c.br.Peek(1)
	if err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if first[0] == socksVersion {
		s.serveSOCKS(c)
		return
	}
	s.handoff.deliver(c)
}

// stop makes run return: the accept loop ends and shutdown follows.
func (s *server) stop() {
	s.stopping.Store(true)
	s.cancel()
	_ = s.ln.Close()
}

// shutdown closes everything the server holds and waits for its
// goroutines.
func (s *server) shutdown() {
	s.cancel()
	_ = s.ln.Close()
	s.mu.Lock()
	s.closing = true
	held := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		held = append(held, c)
	}
	s.mu.Unlock()
	_ = s.handoff.Close()
	_ = s.httpSrv.Close()
	for _, c := range held {
		_ = c.Close()
	}
	s.active.Wait()
}

// enter counts a goroutine or handler about to run; false once the server
// is closing (the caller then does nothing).
func (s *server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.active.Add(1)
	return true
}

func (s *server) leave() { s.active.Done() }

// track registers c to be closed at shutdown; false once the server is
// closing (the caller closes c).
func (s *server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// conn is a connection the server holds: a client's (br buffers the byte
// peeked to tell SOCKS5 from HTTP) or an upstream one (br is nil).
// Closing it runs onClose once.
type conn struct {
	net.Conn
	br      *bufio.Reader
	once    sync.Once
	onClose func()
}

// Read reads through br when there is one.
func (c *conn) Read(b []byte) (int, error) {
	if c.br != nil {
		return c.br.Read(b)
	}
	return c.Conn.Read(b)
}

// Close closes the connection and runs onClose the first time.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.onClose)
	return err
}

// CloseWrite half-closes a TCP connection (the tunnel passes on an EOF).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// handoffListener is the net.Listener http.Server serves: it yields the
// connections serveConn found to speak HTTP.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// deliver hands c to Accept, or closes it once the listener is closed.
func (l *handoffListener) deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// debugStdLog is a standard library logger writing to log at debug level
// (net/http's own errors: a client's malformed request, a closed
// connection): decisions are logged at info, these are noise there.
func debugStdLog(log *zap.Logger) *stdlog.Logger {
	l, err := zap.NewStdLogAt(log, zap.DebugLevel)
	if err != nil {
		return zap.NewStdLog(zap.NewNop())
	}
	return l
}

// Package netproxy is harness's filtering network proxy: one listener that
// serves an HTTP forward proxy (absolute-form requests and CONNECT tunnels)
// and SOCKS5 (CONNECT, no authentication), reaching only the names of an
// allow list (--allow-domain) and those a session was granted.
//
// What it protects: a refused name is never resolved nor dialed; an IP
// literal is reached only when listed; a name resolving to any loopback,
// private, link-local, CGNAT or other non-public address is refused unless
// it is listed exactly (or granted), so a wildcard cannot reach the
// server's own network; the proxy dials exactly the addresses it checked,
// so a second DNS answer (rebinding) cannot redirect it.
//
// What it does not protect: it does not look inside tunnels (no TLS
// interception), so an allowed host is reachable on every port its entry
// admits and with any content; data sent to an allowed host (a gist, a
// package publish) is not stopped. DNS queries for allowed names are made
// by the server. A client that ignores HTTP_PROXY/ALL_PROXY reaches only
// the listeners a runner serves with ServeDirect: the runner's network
// namespace is what forces traffic through the proxy.
package netproxy

import (
	"context"
	"net"
	"net/netip"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Limits, each with its reason.
const (
	// headerTimeout bounds the arrival of a request's head: HTTP headers or
	// the whole SOCKS5 negotiation (a client that connects and says nothing
	// holds a connection slot).
	headerTimeout = 10 * time.Second
	// keepAliveTimeout closes an HTTP connection idle between requests
	// (net/http's Transport keeps its idle connections this long).
	keepAliveTimeout = 90 * time.Second
	// tunnelIdleTimeout closes a tunnel through which no byte moved either
	// way for this long; long enough for a server that thinks before it
	// answers (a large git fetch), short enough to reclaim dead peers.
	tunnelIdleTimeout = 5 * time.Minute
	// resolveTimeout bounds the lookup of one name.
	resolveTimeout = 10 * time.Second
	// dialTimeout bounds the connection to one checked address.
	dialTimeout = 10 * time.Second
	// maxConns is the number of client connections one Serve holds at once;
	// more wait in the listener's backlog.
	maxConns = 256
	// maxHeaderBytes bounds an HTTP request's head.
	maxHeaderBytes = 64 << 10
)

// limits are the bounds in force (the constants above; tests shorten them).
type limits struct {
	header, keepAlive, tunnelIdle, resolve, dial time.Duration
	conns                                        int
}

// Config configures a Proxy; the zero value allows nothing.
type Config struct {
	// Allow are the --allow-domain names: "example.com" (that name exactly)
	// or "*.example.com" (any name below example.com, not the apex), or an
	// IP literal (that address), on every port or, with ":PORT" after it,
	// on that one. Case-insensitive, a trailing dot ignored.
	Allow []string
	// Resolver resolves names; nil means net.DefaultResolver. A test may
	// inject one that maps a test name to 127.0.0.1: the decision is the
	// same either way.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// Decided, when not nil, is told each decision's outcome: "allowed",
	// "refused" (the policy refused the host) or "failed" (an allowed
	// name that could not be resolved). It is called on the connection's
	// goroutine, so it must not block (the server's metrics count them).
	Decided func(outcome string)
}

// Grants is what a session was allowed beyond Config.Allow (the user's
// approvals). Allowed is asked with the normalized host: a name in lower
// case without a trailing dot, or an IP literal as netip prints it. A
// granted host counts as listed exactly. A nil Grants grants nothing.
type Grants interface {
	Allowed(host string) bool
}

// Proxy decides and serves; one Proxy serves any number of listeners (one
// per session). Its methods are safe for concurrent use.
type Proxy struct {
	allow    allowList
	resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	log     *zap.Logger
	limits  limits
	decided func(outcome string)

	mu      sync.Mutex
	closed  bool
	servers map[*server]struct{}
	serving sync.WaitGroup
	// shared are the connection slots of the Serve and ServeDirect calls
	// given one Grants (a runner's listeners of one namespace), with the
	// count of calls using them.
	shared map[Grants]*sharedSlots
}

// sharedSlots are connection slots several servers take from.
type sharedSlots struct {
	slots chan struct{}
	users int
}

// New returns a Proxy for cfg. Every name of cfg.Allow is validated: an
// empty name, white space, a scheme, a path, a port that is not 1 to 65535, "*" alone, a wildcard
// over a single label ("*.com"), a wildcard over an IP literal, or a name
// that is not ASCII letters, digits, '-' and '_' is a *NameError naming it.
// A nil log discards.
func New(cfg Config, log *zap.Logger) (*Proxy, error) {
	allow, err := parseAllow(cfg.Allow)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	p := &Proxy{
		allow: allow, resolver: cfg.Resolver, log: log, decided: cfg.Decided,
		limits: limits{
			header: headerTimeout, keepAlive: keepAliveTimeout, tunnelIdle: tunnelIdleTimeout,
			resolve: resolveTimeout, dial: dialTimeout, conns: maxConns,
		},
		servers: make(map[*server]struct{}),
		shared:  make(map[Grants]*sharedSlots),
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	return p, nil
}

// Allowed returns the normalized allow list in the order given, without
// duplicates: names in lower case without a trailing dot, wildcards as
// "*.example.com", IP literals as netip prints them.
func (p *Proxy) Allowed() []string { return p.allow.names() }

// Serve accepts connections on ln until ln is closed or Close is called,
// and serves each as HTTP or, when its first byte is 0x05, as SOCKS5. The
// Serve and ServeDirect calls given the same grants (a runner's listeners
// of one namespace) hold at most maxConns (256) connections between them;
// more wait (one accepted per listener, the rest in its backlog).
// session names the session in the log; grants (may be nil) is what the
// session was allowed beyond the list. Every decision is logged at info
// ("network access allowed" or "network access refused", with session,
// host, port, via and reason); a refusal is also passed to onRefuse (may
// be nil), called on the connection's goroutine, so it must not block.
//
// When Serve returns, every connection it accepted or dialed is closed
// and every goroutine it started has ended. It returns nil when stopped by
// Close (or called after it); otherwise the error that ended Accept (one
// that errors.Is net.ErrClosed when ln was closed).
func (p *Proxy) Serve(ln net.Listener, session string, grants Grants, onRefuse func(host string, port int, reason string)) error {
	return p.serve(newServer(p, ln, session, grants, onRefuse))
}

// serve runs s until it stops (Serve, ServeDirect).
func (p *Proxy) serve(s *server) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.cancel()
		_ = s.ln.Close()
		return nil
	}
	p.servers[s] = struct{}{}
	p.serving.Add(1)
	share := s.grants != nil && keyable(s.grants)
	if share {
		sh := p.shared[s.grants]
		if sh == nil {
			sh = &sharedSlots{slots: make(chan struct{}, p.limits.conns)}
			p.shared[s.grants] = sh
		}
		sh.users++
		s.slots = sh.slots
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.servers, s)
		if share {
			if sh := p.shared[s.grants]; sh != nil {
				if sh.users--; sh.users == 0 {
					delete(p.shared, s.grants)
				}
			}
		}
		p.mu.Unlock()
		p.serving.Done()
	}()
	return s.run()
}

// Close stops every Serve, closes their listeners, connections and
// tunnels, and waits for them to return. Later Serve calls return at once.
// It always returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	servers := make([]*server, 0, len(p.servers))
	for s := range p.servers {
		servers = append(servers, s)
	}
	p.mu.Unlock()
	for _, s := range servers {
		s.stop()
	}
	p.serving.Wait()
	return nil
}

// keyable reports whether g may key a map (a pointer, or a value of a
// comparable type): one that is not shares no slots.
func keyable(g Grants) bool { return reflect.ValueOf(g).Comparable() }

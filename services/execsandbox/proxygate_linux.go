package execsandbox

import (
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/netproxy"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// noProxy is NO_PROXY of a command under the domain proxy: the session's
// own loopback servers are reached directly.
const noProxy = "localhost,127.0.0.1,::1"

// gate is the domain proxy's listener inside one loopback-only network
// namespace (a session's, or one command's when it has no session): the
// only way out of it. It judges each connection with the configured names
// plus the session's grants (sandboxpolicy.GrantedHosts) and the hosts
// allowed once to the commands running meanwhile, and records each refusal
// for those commands. It is the netproxy.Grants of its Serve.
type gate struct {
	ln    net.Listener
	port  int
	sess  *session.Session // nil: a command without a session
	id    string           // sess's ID, "" without one
	proxy *netproxy.Proxy
	ns    *subproc.NetNS
	bw    subproc.Bwrap // its Stage and Credential make the direct listeners
	log   *zap.Logger
	// served is closed when Serve has returned (every connection closed).
	served chan struct{}

	dmu          sync.Mutex // guards direct
	direct       directs
	directServed sync.WaitGroup // the direct listeners' Serve calls

	mu      sync.Mutex // guards running
	running map[*watch]struct{}
}

// watch is one command running behind a gate: the hosts allowed to it
// once, and the refusals made while it ran: the first exec.MaxRefused
// hosts (seen holds their names), and the count of refusals past them.
type watch struct {
	hosts   []string
	refused []exec.RefusedHost
	seen    map[string]struct{}
	more    int
}

// openGate makes the proxy's listener inside ns (subproc.NetNS.ListenAll,
// as b.Credential, with b.Stage as the helper), with the listeners of the
// proxy's exact names and the namespace's name server, and serves p on
// them for sess (nil for one command without a session). Errors: they
// could not be made (the command must not run: it would have no network
// and no report why).
func openGate(p *netproxy.Proxy, ns *subproc.NetNS, b subproc.Bwrap, sess *session.Session, log *zap.Logger) (*gate, error) {
	g := &gate{
		sess: sess, proxy: p, ns: ns, bw: b, log: log,
		served: make(chan struct{}), running: map[*watch]struct{}{},
	}
	if sess != nil {
		g.id = sess.ID()
	}
	// One helper run makes the proxy's listener, the listeners of the
	// exact names (proxydirect_linux.go) and the name server's socket.
	direct := p.Direct()
	names := slices.Sorted(maps.Keys(direct))
	tcp := []netip.AddrPort{proxyAddr}
	var targets []directTarget
	g.dmu.Lock()
	defer g.dmu.Unlock()
	for _, name := range names {
		// Room for the name server's socket and the listeners planned.
		_, adds, t, ok := g.plan(name, direct[name], 1+len(tcp))
		if ok {
			tcp, targets = append(tcp, adds...), append(targets, t...)
		}
	}
	lns, pcs, err := ns.ListenAll(b.Stage, b.Credential, tcp, []netip.AddrPort{dnsAddr})
	if err != nil {
		return nil, err
	}
	g.ln, g.port = lns[0], lns[0].Addr().(*net.TCPAddr).Port
	go func() {
		defer close(g.served)
		_ = p.Serve(g.ln, g.id, g, g.refuse)
	}()
	g.serveDirect(lns[1:], targets)
	g.direct.dns = pcs[0]
	g.directServed.Add(1)
	go func() {
		defer g.directServed.Done()
		g.serveDNS(pcs[0])
	}()
	return g, nil
}

// proxyAddr is where the proxy listens in a namespace: 127.0.0.1, on a
// port the kernel picks.
var proxyAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)

// Allowed reports whether host was granted beyond the configured names:
// for the session, or once to a command running now (netproxy.Grants).
func (g *gate) Allowed(host string) bool {
	if slices.Contains(sandboxpolicy.GrantedHosts(g.sess), host) {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for w := range g.running {
		if slices.Contains(w.hosts, host) {
			return true
		}
	}
	return false
}

// refuse records a refusal for every command running now, each host once
// per command, up to exec.MaxRefused hosts; past them, each refusal of
// another host is counted. It costs a map look-up per command.
func (g *gate) refuse(host string, port int, reason string) {
	// A name is at most 253 bytes; what a command sends as one is cut
	// there (and its reason, which may quote it), so its refusals cannot
	// flood the result past the output's own bounds.
	host, reason = clip(host, maxHostBytes), clip(reason, 2*maxHostBytes)
	g.mu.Lock()
	defer g.mu.Unlock()
	for w := range g.running {
		switch _, dup := w.seen[host]; {
		case dup:
		case len(w.refused) < exec.MaxRefused:
			w.seen[host] = struct{}{}
			w.refused = append(w.refused, exec.RefusedHost{Host: host, Port: port, Reason: reason})
		default:
			w.more++
		}
	}
}

// enter registers a command about to run, with the hosts allowed to it
// once; leave ends it and returns what was refused while it ran (the
// hosts listed, and the count of refusals past them).
func (g *gate) enter(hosts []string) *watch {
	w := &watch{hosts: hosts, seen: map[string]struct{}{}}
	g.mu.Lock()
	g.running[w] = struct{}{}
	g.mu.Unlock()
	return w
}

func (g *gate) leave(w *watch) refusals {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.running, w)
	return refusals{hosts: w.refused, more: w.more}
}

// refusals are what the proxy refused a command: the hosts listed (at most
// exec.MaxRefused) and the count of refusals past them.
type refusals struct {
	hosts []exec.RefusedHost
	more  int
}

// env returns environ with the proxy variables set to the gate (replacing
// any passed through): HTTP(S)_PROXY in both cases as http://, ALL_PROXY as
// socks5h:// (names resolved by the proxy), NO_PROXY the loopback names.
func (g *gate) env(environ []string) []string {
	httpURL := "http://127.0.0.1:" + strconv.Itoa(g.port)
	socksURL := "socks5h://127.0.0.1:" + strconv.Itoa(g.port)
	set := map[string]string{
		"HTTP_PROXY": httpURL, "HTTPS_PROXY": httpURL, "ALL_PROXY": socksURL, "NO_PROXY": noProxy,
	}
	for k, v := range set {
		set[strings.ToLower(k)] = v
	}
	out := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		_, ours := set[name]
		return ours
	})
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"} {
		out = append(out, k+"="+set[k], strings.ToLower(k)+"="+set[k])
	}
	return out
}

// close stops serving: the listener closes and every connection with it;
// it returns once Serve has.
func (g *gate) close() {
	_ = g.ln.Close()
	<-g.served
	g.closeDirect()
}

// maxHostBytes bounds a refused host's name as recorded (a DNS name is at
// most 253 bytes; the quotes of one that is not a name count too).
const maxHostBytes = 260

// clip returns s cut to at most n bytes, marked with "..." when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

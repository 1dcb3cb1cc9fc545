package execsandbox

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/netproxy"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// firstDirectAddr is the address of a gate's first direct name; the next
// ones follow it. A range of 127/8 that nothing else uses by convention
// (Debian's 127.0.1.1 is the machine's own name).
var firstDirectAddr = netip.AddrFrom4([4]byte{127, 77, 0, 2})

// directs is a gate's direct names (issue 36): each name a command may
// reach without a proxy stands for an address of the namespace's own
// loopback, listed in the command's /etc/hosts, where a listener on each
// of its ports tunnels to the name through the proxy's judgement
// (netproxy.ServeDirect). Node's fetch, ssh, Go and Python programs that
// ignore the proxy variables then reach an allowed host, and a refusal
// names the host like any other.
type directs struct {
	addr   map[string]netip.Addr   // name → its address
	failed map[netip.AddrPort]bool // listeners that could not be made
	lns    []net.Listener
	next   netip.Addr
}

// hostsFile returns the /etc/hosts of a command behind g that was allowed
// hosts once: the direct names (the proxy's exact names with their ports,
// netproxy.Direct; the session's granted and those allowed once, on
// netproxy.DirectPorts), each at its address, then the host's own file
// (its other names keep resolving). The listeners of names and ports not
// served yet are made first; "" when there is no direct name. A listener
// that cannot be made (its address taken in the namespace) leaves its
// name and port to the proxy variables, logged once.
func (g *gate) hostsFile(once []string) string {
	want := g.proxy.Direct()
	extra := append(slices.Clone(sandboxpolicy.GrantedHosts(g.sess)), once...)
	for _, h := range extra {
		if _, err := netip.ParseAddr(h); err == nil {
			continue
		}
		if _, ok := want[h]; !ok {
			want[h] = netproxy.DirectPorts
		}
	}
	if len(want) == 0 {
		return ""
	}
	g.dmu.Lock()
	defer g.dmu.Unlock()
	d := &g.direct
	if d.addr == nil {
		d.addr, d.failed, d.next = map[string]netip.Addr{}, map[netip.AddrPort]bool{}, firstDirectAddr
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	var adds []netip.AddrPort
	var targets []directTarget
	for _, name := range names {
		a, ok := d.addr[name]
		if !ok {
			if len(d.lns)+len(adds)+len(want[name]) > subproc.MaxDirect {
				continue
			}
			a, d.next = d.next, d.next.Next()
			d.addr[name] = a
		}
		for _, port := range want[name] {
			ap := netip.AddrPortFrom(a, uint16(port))
			if d.failed[ap] || g.serving(ap) || len(d.lns)+len(adds) >= subproc.MaxDirect {
				continue
			}
			adds = append(adds, ap)
			targets = append(targets, directTarget{name, port})
		}
	}
	g.listenDirect(adds, targets)
	var b strings.Builder
	for _, name := range names {
		if a, ok := d.addr[name]; ok {
			b.WriteString(a.String() + " " + name + "\n")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	if host, err := os.ReadFile("/etc/hosts"); err == nil && len(host) <= maxHostsBytes {
		b.WriteString("# the machine's own /etc/hosts\n")
		b.Write(host)
	}
	return b.String()
}

// maxHostsBytes bounds the host's /etc/hosts copied into a command's.
const maxHostsBytes = 1 << 20

// directTarget is the name and port one direct listener stands for.
type directTarget struct {
	host string
	port int
}

// serving reports whether a listener on ap serves already. g.dmu is held.
func (g *gate) serving(ap netip.AddrPort) bool {
	return slices.ContainsFunc(g.direct.lns, func(ln net.Listener) bool {
		return ln.Addr().String() == ap.String()
	})
}

// listenDirect makes the listeners of adds inside g's namespace, each
// served for its target; when they cannot all be made, each alone, and
// those that fail are not tried again. g.dmu is held.
func (g *gate) listenDirect(adds []netip.AddrPort, targets []directTarget) {
	if len(adds) == 0 {
		return
	}
	lns, err := g.ns.ListenDirect(g.bw.Stage, g.bw.Credential, adds)
	if err != nil {
		lns = make([]net.Listener, len(adds))
		for i, ap := range adds {
			one, err := g.ns.ListenDirect(g.bw.Stage, g.bw.Credential, adds[i:i+1])
			if err != nil {
				g.direct.failed[ap] = true
				g.log.Info("a direct listener could not be made; its host is reached through the proxy variables only",
					zap.String("host", targets[i].host), zap.Int("port", targets[i].port), zap.Error(err))
				continue
			}
			lns[i] = one[0]
		}
	}
	for i, ln := range lns {
		if ln == nil {
			continue
		}
		g.direct.lns = append(g.direct.lns, ln)
		t := targets[i]
		g.directServed.Add(1)
		go func() {
			defer g.directServed.Done()
			_ = g.proxy.ServeDirect(ln, g.id, t.host, t.port, g, g.refuse)
		}()
	}
}

// closeDirect closes the direct listeners and waits for their Serve.
func (g *gate) closeDirect() {
	g.dmu.Lock()
	for _, ln := range g.direct.lns {
		_ = ln.Close()
	}
	g.direct.lns = nil
	g.dmu.Unlock()
	g.directServed.Wait()
}

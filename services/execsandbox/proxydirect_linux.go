package execsandbox

import (
	"io"
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
// (Debian's 127.0.1.1 is the machine's own name); 127.77.0.1 is the
// namespace's name server (dnsAddr).
var firstDirectAddr = netip.AddrFrom4([4]byte{127, 77, 0, 2})

// directs is a gate's direct names (issue 36): each name a command may
// reach without a proxy stands for an address of the namespace's own
// loopback, listed in the command's /etc/hosts (the exact names) or given
// by the namespace's name server (any name the proxy admits), where a
// listener on each of its ports tunnels to the name through the proxy's
// judgement (netproxy.ServeDirect). Node's fetch, ssh, Go and Python
// programs that ignore the proxy variables then reach an allowed host, and
// a refusal names the host like any other.
type directs struct {
	addr   map[string]netip.Addr   // name → its address
	failed map[netip.AddrPort]bool // listeners that could not be made
	lns    []net.Listener
	next   netip.Addr
	dns    net.PacketConn // the name server's socket (made with the gate)
	// closed is set when the gate closes: no listener is made after.
	closed bool
}

// etcFiles returns the /etc/hosts and /etc/resolv.conf of a command behind
// g that was allowed hosts once. The hosts file lists the exact direct
// names (the proxy's exact names with their ports, netproxy.Direct; the
// session's granted and those allowed once, on netproxy.DirectPorts), each
// at its address, then the host's own file (its other names keep
// resolving); resolv.conf names the namespace's name server (serveDNS),
// made at the first command. The listeners of names and ports not served
// yet are made first. A listener that cannot be made (its address taken in
// the namespace) leaves its name and port to the proxy variables, logged
// once.
func (g *gate) etcFiles(once []string) []subproc.EtcFile {
	want := g.proxy.Direct()
	for _, h := range append(slices.Clone(sandboxpolicy.GrantedHosts(g.sess)), once...) {
		if a, err := netip.ParseAddr(h); err == nil {
			if !netproxy.DirectLiteral(a) {
				continue
			}
			h = a.String()
		}
		want[h] = mergePorts(want[h], netproxy.DirectPorts)
	}
	g.dmu.Lock()
	defer g.dmu.Unlock()
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		g.mapName(name, want[name])
	}
	var out []subproc.EtcFile
	var b strings.Builder
	for _, name := range names {
		if a, ok := g.direct.addr[name]; ok && a.String() != name {
			b.WriteString(a.String() + " " + name + "\n")
		}
	}
	if b.Len() > 0 {
		if host, ok := readableHosts("/etc/hosts"); ok {
			b.WriteString("# the machine's own /etc/hosts\n")
			b.Write(host)
		}
		out = append(out, subproc.EtcFile{Path: "/etc/hosts", Content: b.String()})
	}
	if g.direct.dns != nil {
		out = append(out, subproc.EtcFile{Path: "/etc/resolv.conf", Content: resolvConf})
	}
	return out
}

// maxHostsBytes bounds the host's /etc/hosts copied into a command's.
const maxHostsBytes = 1 << 20

// readableHosts returns the host's hosts file at path when every user may
// read it (the server copies it: a file only its own user or root may read
// stays out of a command's) and it is at most maxHostsBytes.
func readableHosts(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close() //nolint:errcheck // read only
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o004 == 0 || fi.Size() > maxHostsBytes {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxHostsBytes))
	return b, err == nil
}

// mergePorts returns a with the ports of b it lacks, sorted.
func mergePorts(a, b []int) []int {
	out := slices.Clone(a)
	for _, p := range b {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// mapName gives name an address (its own, once; an IP literal,
// netproxy.DirectLiteral, is its own address) and serves each of ports
// there, making the listeners not made yet; it reports the address, false
// when the gate holds subproc.MaxDirect listeners already and name has
// none. g.dmu is held.
func (g *gate) mapName(name string, ports []int) (netip.Addr, bool) {
	a, adds, targets, ok := g.plan(name, ports, 0)
	if ok {
		g.listenDirect(adds, targets)
	}
	return a, ok
}

// plan gives name an address (its own, once; a literal's is itself) and returns the listeners
// of ports not made yet there, with their targets, leaving room for
// reserve more sockets (those already planned for a helper run); false when the gate
// holds subproc.MaxDirect listeners already and name has none. g.dmu is
// held.
func (g *gate) plan(name string, ports []int, reserve int) (netip.Addr, []netip.AddrPort, []directTarget, bool) {
	d := &g.direct
	if d.addr == nil {
		d.addr, d.failed, d.next = map[string]netip.Addr{}, map[netip.AddrPort]bool{}, firstDirectAddr
	}
	if d.closed {
		return netip.Addr{}, nil, nil, false
	}
	// Listeners that could not be made count too: a command taking the
	// ports first cannot make the gate hand out addresses without end.
	room := subproc.MaxDirect - reserve - len(d.lns) - len(d.failed)
	a, ok := d.addr[name]
	if !ok {
		if len(ports) > room {
			return netip.Addr{}, nil, nil, false
		}
		if lit, err := netip.ParseAddr(name); err == nil && netproxy.DirectLiteral(lit) {
			// Given to the namespace's loopback by subproc.NetNS.ListenAll.
			a = lit
		} else {
			a, d.next = d.next, d.next.Next()
		}
		d.addr[name] = a
	}
	var adds []netip.AddrPort
	var targets []directTarget
	for _, port := range ports {
		ap := netip.AddrPortFrom(a, uint16(port))
		if d.failed[ap] || g.serving(ap) || len(adds) >= room {
			continue
		}
		adds = append(adds, ap)
		targets = append(targets, directTarget{name, port})
	}
	return a, adds, targets, true
}

// directTarget is the name and port one direct listener stands for.
type directTarget struct {
	host string
	port int
}

// servesAny reports whether a listener of the gate serves on a. g.dmu is
// held.
func (g *gate) servesAny(a netip.Addr) bool {
	return slices.ContainsFunc(g.direct.lns, func(ln net.Listener) bool {
		ap, err := netip.ParseAddrPort(ln.Addr().String())
		return err == nil && ap.Addr() == a
	})
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
	if len(adds) == 0 || g.direct.closed {
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
	g.serveDirect(lns, targets)
}

// serveDirect serves each of lns (nil ones skipped) for its target.
// g.dmu is held.
func (g *gate) serveDirect(lns []net.Listener, targets []directTarget) {
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

// closeDirect closes the direct listeners and the name server and waits
// for them to stop.
func (g *gate) closeDirect() {
	g.dmu.Lock()
	g.direct.closed = true
	for _, ln := range g.direct.lns {
		_ = ln.Close()
	}
	g.direct.lns = nil
	if g.direct.dns != nil {
		_ = g.direct.dns.Close()
	}
	g.dmu.Unlock()
	g.directServed.Wait()
}

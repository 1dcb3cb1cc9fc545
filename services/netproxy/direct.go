package netproxy

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// DirectPorts are the ports on which a name listed without a port, or
// granted to a session, is reached by programs that ignore the proxy
// variables (Direct): ssh, HTTP and HTTPS.
var DirectPorts = []int{22, 80, 443}

// Direct returns the names listed exactly (no wildcard, not localhost: the
// command's own loopback keeps that name) and the IP literals a runner can
// serve at their own address (DirectLiteral, in netip's form) with the
// ports a runner opens to programs that do not use a proxy (Node's fetch,
// ssh, Go, Python, psql): the ports their entries name, DirectPorts for an
// entry without one; each list sorted. A runner maps each name to an
// address of the command's own, gives the command's loopback each literal,
// and serves each port there with ServeDirect.
func (p *Proxy) Direct() map[string][]int {
	out := map[string][]int{}
	for _, e := range p.allow {
		key := e.name
		switch {
		case e.ip.IsValid():
			if !DirectLiteral(e.ip) {
				continue
			}
			key = e.ip.String()
		case e.suffix != "" || Local(e.name) != "":
			continue
		}
		out[key] = e.addPorts(out[key])
		slices.Sort(out[key])
	}
	return out
}

// DirectLiteral reports whether a listed or granted IP literal a is served
// to programs that ignore the proxy variables at a itself (Direct): an
// IPv4 unicast address outside 127.0.0.0/8 (the command's own loopback,
// where its own servers listen) and 0.0.0.0/8. Other literals (IPv6 among
// them) are reached through the proxy variables only.
func DirectLiteral(a netip.Addr) bool {
	return a.Is4() && !a.IsLoopback() && !a.IsMulticast() && a.As4()[0] != 0 && a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// addPorts returns ports with those on which e admits a program that
// ignores the proxy variables and ports lacks: its port, or DirectPorts
// for an entry without one.
func (e pattern) addPorts(ports []int) []int {
	list := []int{e.port}
	if e.port == 0 {
		list = DirectPorts
	}
	for _, port := range list {
		if !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	return ports
}

// ServeDirect serves ln as Serve does, for a program that connects to an
// address standing for host:port (a name the runner resolved to an address
// of its own, Direct): each connection is judged as a request for host:port
// (logged with via "direct"), then tunneled to the checked addresses; a
// refused or unresolved one is closed at once (the refusal goes to
// onRefuse). It returns as Serve does.
func (p *Proxy) ServeDirect(ln net.Listener, session, host string, port int, grants Grants, onRefuse func(host string, port int, reason string)) error {
	s := newServer(p, ln, session, grants, onRefuse)
	s.direct = &target{host: host, port: port}
	return p.serve(s)
}

// target is the one destination of a ServeDirect listener.
type target struct {
	host string
	port int
}

// serveDirect serves one connection of a ServeDirect listener.
func (s *server) serveDirect(c *conn) {
	v := s.judge(s.ctx, viaDirect, s.direct.host, s.direct.port)
	if v.outcome != allowed {
		_ = c.Close()
		return
	}
	upstream, err := s.dial(s.ctx, v)
	if err != nil {
		s.logDial(viaDirect, v, err)
		_ = c.Close()
		return
	}
	s.tunnel(c, upstream)
}

// Admit returns the ports on which a program that ignores the proxy
// variables reaches host (a name as a command looks it up; Host's
// normalization applies) when the list or grants admit it: the ports of
// the exact entries naming it, else of the wildcard admitting it, each
// entry without one standing for DirectPorts; a granted name gets
// DirectPorts. Otherwise it returns nil and the refusal's reason, as the
// proxy words it. It resolves nothing: a connection to the name is judged
// again (ServeDirect), its addresses checked then.
func (p *Proxy) Admit(host string, grants Grants) (ports []int, normalized, reason string) {
	name, problem := normalizeName(host)
	switch {
	case problem != "":
		return nil, host, "not a host name: " + problem
	case Local(name) != "":
		// localhost stays the command's own loopback: a listed one is
		// reached through the proxy variables.
		return nil, name, "localhost is the command's own loopback, not a host the proxy reaches by name"
	}
	for _, e := range p.allow {
		if !e.ip.IsValid() && e.suffix == "" && e.name == name {
			ports = e.addPorts(ports)
		}
	}
	if grants != nil && grants.Allowed(name) {
		ports = pattern{}.addPorts(ports)
	}
	if len(ports) == 0 {
		for _, e := range p.allow {
			if e.suffix != "" && strings.HasSuffix(name, e.suffix) {
				ports = e.addPorts(ports)
			}
		}
	}
	if len(ports) == 0 {
		return nil, name, fmt.Sprintf("not in --allow-domain (allowed: %s)", p.allow)
	}
	slices.Sort(ports)
	return ports, name, ""
}

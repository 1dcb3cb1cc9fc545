package netproxy

import (
	"net"
	"slices"
)

// DirectPorts are the ports on which a name listed without a port, or
// granted to a session, is reached by programs that ignore the proxy
// variables (Direct): ssh, HTTP and HTTPS.
var DirectPorts = []int{22, 80, 443}

// Direct returns the names listed exactly (no wildcard, no IP literal)
// with the ports a runner opens to programs that do not use a proxy (Node's
// fetch, ssh, Go, Python): the ports their entries name, DirectPorts for an
// entry without one; each list sorted. A runner maps each name to an
// address of the command's own and serves each port there with ServeDirect.
func (p *Proxy) Direct() map[string][]int {
	out := map[string][]int{}
	for _, e := range p.allow {
		if e.ip.IsValid() || e.suffix != "" {
			continue
		}
		ports := []int{e.port}
		if e.port == 0 {
			ports = DirectPorts
		}
		for _, port := range ports {
			if !slices.Contains(out[e.name], port) {
				out[e.name] = append(out[e.name], port)
			}
		}
		slices.Sort(out[e.name])
	}
	return out
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

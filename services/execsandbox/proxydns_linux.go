package execsandbox

import (
	"net"
	"net/netip"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/net/dns/dnsmessage"
)

// dnsAddr is where a gate's name server listens in its namespace.
var dnsAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 77, 0, 1}), 53)

// resolvConf is the /etc/resolv.conf of a command behind a gate with its
// name server: that server alone, answering at once.
const resolvConf = "# harness: names are answered by the sandbox's network proxy\nnameserver 127.77.0.1\noptions timeout:2 attempts:2\n"

// dnsTTL is the time to live of an answer, in seconds: a name's address
// holds for the namespace's life.
const dnsTTL = 300

// serveDNS answers the queries on pc until it is closed (one at a time: a
// new name may make its listeners first).
func (g *gate) serveDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := g.answer(buf[:n]); resp != nil {
			_, _ = pc.WriteTo(resp, from)
		}
	}
}

// answer is the response to the query q (nil for a message that is not
// one): for an A question, the name's direct address when the proxy admits
// the name (netproxy.Proxy.Admit: listed, matched by a wildcard, granted
// or allowed once to a command running now), made now if it has none;
// otherwise NXDOMAIN, and an A or AAAA question for a name refused is
// recorded as a refusal for the commands running (the network marker
// names it). Any other question about an admitted name is answered
// without records (the addresses are IPv4 only); one of any other name
// gets NXDOMAIN.
func (g *gate) answer(q []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil
	}
	qs, err := p.AllQuestions()
	resp := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if err != nil || len(qs) != 1 || h.OpCode != 0 {
		resp.RCode = dnsmessage.RCodeFormatError
		return build(resp, nil, nil)
	}
	question := qs[0]
	name := strings.TrimSuffix(strings.ToLower(question.Name.String()), ".")
	addr, reason, refused := g.lookup(name)
	g.log.Debug("name server question", zap.String("session", g.id), zap.String("name", name), zap.Stringer("type", question.Type), zap.String("unanswered", reason))
	switch {
	case reason != "":
		resp.RCode = dnsmessage.RCodeNameError
		if refused && (question.Type == dnsmessage.TypeA || question.Type == dnsmessage.TypeAAAA) {
			g.refuse(name, 0, reason)
		}
		return build(resp, &question, nil)
	case question.Class != dnsmessage.ClassINET || question.Type != dnsmessage.TypeA:
		return build(resp, &question, nil)
	}
	return build(resp, &question, &dnsmessage.AResource{A: addr.As4()})
}

// lookup returns name's direct address, made now when it has none and the
// proxy admits it, or why it has none: refused by the proxy (refused
// true: the commands running get it as a refusal), or with no listener of
// the gate serving it (the gate is closing, holds subproc.MaxDirect
// listeners, or could make none of the name's: a command took the ports
// first), which is no refusal of the host.
func (g *gate) lookup(name string) (addr netip.Addr, reason string, refused bool) {
	ports, norm, reason := g.proxy.Admit(name, g)
	if reason != "" {
		return netip.Addr{}, reason, true
	}
	g.dmu.Lock()
	defer g.dmu.Unlock()
	a, ok := g.mapName(norm, ports)
	if !ok || !g.servesAny(a) {
		return netip.Addr{}, "the sandbox has no direct address serving it (the namespace's are taken); reach it through the proxy variables (HTTPS_PROXY, ALL_PROXY)", false
	}
	return a, "", false
}

// build packs a response: h, question q (nil: none) and one A answer (nil:
// none). It returns nil when it cannot be packed.
func build(h dnsmessage.Header, q *dnsmessage.Question, a *dnsmessage.AResource) []byte {
	b := dnsmessage.NewBuilder(nil, h)
	b.EnableCompression()
	if q != nil {
		if b.StartQuestions() != nil || b.Question(*q) != nil {
			return nil
		}
	}
	if a != nil {
		if b.StartAnswers() != nil || b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}, *a) != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// outcome is what became of one request for a host.
type outcome int

const (
	// allowed: the host may be reached at verdict.addrs.
	allowed outcome = iota
	// refused: the policy refuses the host (reported through onRefuse).
	refused
	// failed: the host is allowed but could not be resolved.
	failed
)

// String is the outcome as Config.Decided is told it.
func (o outcome) String() string {
	switch o {
	case allowed:
		return "allowed"
	case refused:
		return "refused"
	default:
		return "failed"
	}
}

// verdict is the decision on one host and port: host is the normalized host
// (a name in lower case without a trailing dot, or an IP literal), reason
// why, addrs the checked addresses to dial, in order (allowed only).
type verdict struct {
	outcome outcome
	host    string
	port    int
	reason  string
	addrs   []netip.Addr
}

// message is the plain-text line a client is told, e.g. "harness: network
// access to evil.example refused: not in --allow-domain (allowed: none)".
func (v verdict) message() string {
	word := "refused"
	if v.outcome == failed {
		word = "failed"
	}
	return fmt.Sprintf("harness: network access to %s %s: %s", v.host, word, v.reason)
}

// decide is the whole decision for rawHost:port. It resolves a name only
// once it is admitted by the list or grants (a refused name causes no DNS
// query), refuses it when any address it resolves to is not public unless
// it is admitted exactly, and hands back exactly the addresses it checked.
func (p *Proxy) decide(ctx context.Context, rawHost string, port int, grants Grants) verdict {
	v := verdict{host: rawHost, port: port}
	refuse := func(format string, args ...any) verdict {
		v.outcome, v.reason = refused, fmt.Sprintf(format, args...)
		return v
	}
	if ip, ok := parseIP(rawHost); ok {
		v.host = ip.String()
		if p.allow.matchIP(ip, port) {
			v.reason, v.addrs = "IP address listed in --allow-domain", []netip.Addr{ip}
			return v
		}
		if grants != nil && grants.Allowed(v.host) {
			v.reason, v.addrs = "IP address granted for the session", []netip.Addr{ip}
			return v
		}
		return refuse("an IP address is reachable only when it is listed in --allow-domain (allowed: %s)", p.allow)
	}
	name, problem := normalizeName(rawHost)
	if problem != "" {
		v.host = fmt.Sprintf("%q", rawHost)
		return refuse("not a host name: %s", problem)
	}
	v.host = name
	entry, exact := p.allow.matchName(name, port)
	switch {
	case exact:
		v.reason = "listed in --allow-domain"
	case grants != nil && grants.Allowed(name):
		v.reason, exact = "granted for the session", true
	case entry != "":
		v.reason = "matches " + entry + " in --allow-domain"
	default:
		return refuse("not in --allow-domain (allowed: %s)", p.allow)
	}
	rctx, cancel := context.WithTimeout(ctx, p.limits.resolve)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(rctx, "ip", name)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	if err != nil {
		v.outcome, v.reason = failed, "cannot resolve it: "+err.Error()
		return v
	}
	if !exact {
		var bad []string
		for _, a := range addrs {
			if what := nonPublic(a); what != "" {
				bad = append(bad, fmt.Sprintf("%s (%s)", a.WithZone(""), what))
			}
		}
		if len(bad) > 0 {
			return refuse("it resolves to %s; a loopback, private or other non-public address is reachable only "+
				"through a name listed exactly in --allow-domain, not through the wildcard %s", strings.Join(bad, ", "), entry)
		}
	}
	v.addrs = addrs
	return v
}

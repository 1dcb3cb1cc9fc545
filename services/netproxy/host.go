package netproxy

import (
	"net/netip"
	"strings"
)

// Host returns s, one exact host as a request names it (a host name, an IP
// literal, an IPv6 one with or without brackets), in the form the proxy
// compares it: a name lower-cased without a final dot, an address in its
// usual spelling (an IPv4-mapped IPv6 address stays one: the proxy takes it
// for another literal than the IPv4 one); or, with "", the reason it is not one (a wildcard, a scheme, a path, a port, a
// zone, a label a host name cannot have, a last label that is a number).
// It is the one syntax of hosts: --allow-domain's exact entries and the
// hosts an escalation asks for (sandboxpolicy.CleanHosts) go through it.
func Host(s string) (host, reason string) {
	s = strings.TrimSpace(s)
	switch {
	case strings.Contains(s, "*"):
		return "", "a wildcard is not one host: name the host"
	case strings.Contains(s, "://"):
		return "", "a URL is not a name: give the host name alone, without the scheme"
	case strings.ContainsAny(s, "/?#"):
		return "", "a path is not part of a name: give the host name alone"
	}
	if ip, ok := parseIP(s); ok {
		if ip.Zone() != "" {
			return "", "an IP address with a zone is not allowed"
		}
		return ip.String(), ""
	}
	if strings.Contains(s, ":") {
		return "", "a port is not part of a name"
	}
	return normalizeName(s)
}

// Local returns what kind of non-public destination host (Host's form)
// names: "localhost" for localhost and the names below it, an address's
// kind by nonPublic (the one rule of which addresses are not the public
// Internet, IANA's special-purpose registries); "" for a public address or
// any other name (which the proxy resolves and judges when a command
// connects). A grant of a
// local one reaches the machine harness runs on or its networks, not the
// Internet.
func Local(host string) string {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "localhost"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return nonPublic(a)
	}
	return ""
}

package netproxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// maxNameLen is the longest host name DNS carries (RFC 1035 2.3.4, without
// the trailing dot); maxLabelLen the longest label.
const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// NameError is an --allow-domain name New refused: Name as it was given,
// Reason what is wrong with it.
type NameError struct {
	Name   string
	Reason string
}

// Error names the flag, the name and the reason.
func (e *NameError) Error() string {
	return fmt.Sprintf("netproxy: --allow-domain %q: %s", e.Name, e.Reason)
}

// pattern is one normalized allow-list entry: a name ("example.com"), a
// wildcard ("*.example.com", suffix ".example.com") or an IP literal (ip
// valid), on every port (port 0) or on the one it names ("example.com:22").
type pattern struct {
	text   string
	name   string // the name or wildcard, without the port
	suffix string
	ip     netip.Addr
	port   int
}

// admits reports whether p's port admits port.
func (p pattern) admits(port int) bool { return p.port == 0 || p.port == port }

// allowList is the normalized --allow-domain list, in the order given,
// without duplicates. It is data with predicates: it does no I/O.
type allowList []pattern

// parseAllow normalizes and validates every name; the first bad one is a
// *NameError.
func parseAllow(names []string) (allowList, error) {
	var l allowList
	seen := make(map[string]bool, len(names))
	for _, raw := range names {
		p, reason := parsePattern(raw)
		if reason != "" {
			return nil, &NameError{Name: raw, Reason: reason}
		}
		if !seen[p.text] {
			seen[p.text] = true
			l = append(l, p)
		}
	}
	return l, nil
}

// parsePattern returns the entry for raw, or the reason it is not one.
func parsePattern(raw string) (pattern, string) {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		return pattern{}, "empty name"
	case strings.ContainsAny(s, " \t\r\n"):
		return pattern{}, "contains white space"
	case strings.Contains(s, "://"):
		return pattern{}, "a URL is not a name: give the host name alone, without the scheme"
	case strings.ContainsAny(s, "/?#"):
		return pattern{}, "a path is not part of a name: give the host name alone"
	}
	s, port, reason := cutPort(s)
	if reason != "" {
		return pattern{}, reason
	}
	p, reason := parseHost(s)
	if reason != "" {
		return pattern{}, reason
	}
	p.name, p.port = p.text, port
	if port != 0 {
		host := p.text
		if p.ip.Is6() {
			host = "[" + host + "]"
		}
		p.text = host + ":" + strconv.Itoa(port)
	}
	return p, ""
}

// cutPort splits a port off s ("example.com:22", "10.0.0.5:22",
// "[::1]:22"); port 0 when s names none (an IPv6 literal without brackets
// is all address).
func cutPort(s string) (host string, port int, reason string) {
	var rest string
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 || end == len(s)-1 {
			return s, 0, ""
		}
		if s[end+1] != ':' {
			return "", 0, "only a port may follow an IPv6 address in brackets"
		}
		host, rest = s[:end+1], s[end+2:]
	case strings.Count(s, ":") == 1:
		host, rest, _ = strings.Cut(s, ":")
	default:
		return s, 0, ""
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > 65535 || !allDigits(rest) {
		return "", 0, fmt.Sprintf("the port after %s must be a number from 1 to 65535 (a listed name without one is allowed on every port)", host)
	}
	return host, n, ""
}

// parseHost returns the entry for the host part s of an entry (no port),
// or the reason it is not one.
func parseHost(s string) (pattern, string) {
	if s == "*" || s == "*." {
		return pattern{}, `"*" alone would allow every name: list the names`
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		if _, err := netip.ParseAddr(strings.Trim(rest, "[]")); err == nil {
			return pattern{}, "a wildcard does not apply to an IP address"
		}
		name, reason := normalizeName(rest)
		if reason != "" {
			return pattern{}, reason
		}
		if !strings.Contains(name, ".") {
			return pattern{}, fmt.Sprintf("a wildcard over a top-level domain (*.%s) would allow a whole registry: list names below it", name)
		}
		return pattern{text: "*." + name, suffix: "." + name}, ""
	}
	if strings.Contains(s, "*") {
		return pattern{}, `"*" is allowed only as the whole first label ("*.example.com")`
	}
	if ip, ok := parseIP(s); ok {
		if ip.Zone() != "" {
			return pattern{}, "an IP address with a zone is not allowed"
		}
		return pattern{text: ip.String(), ip: ip}, ""
	}
	if strings.Contains(s, ":") {
		return pattern{}, "not a name nor an IP address"
	}
	name, reason := normalizeName(s)
	if reason != "" {
		return pattern{}, reason
	}
	return pattern{text: name}, ""
}

// parseIP parses an IP literal, an IPv6 one with or without brackets.
func parseIP(s string) (netip.Addr, bool) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	ip, err := netip.ParseAddr(s)
	return ip, err == nil
}

// normalizeName returns s lower-cased without a trailing dot, or the reason
// it is not a host name: ASCII labels of letters, digits, '-' and '_' (1-63
// bytes, not starting or ending with '-'), at most 253 bytes in all, the
// last label not a number, decimal or hexadecimal (`0x7f`: resolvers may
// read it as an address).
func normalizeName(s string) (string, string) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" {
		return "", "empty name"
	}
	if len(s) > maxNameLen {
		return "", fmt.Sprintf("longer than %d bytes", maxNameLen)
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if reason := labelProblem(l); reason != "" {
			return "", reason
		}
	}
	if last := labels[len(labels)-1]; allDigits(last) || strings.HasPrefix(last, "0x") && allHex(last[2:]) {
		return "", "the last label is a number (decimal or hexadecimal), which resolvers may read as an address: not a host name"
	}
	return s, ""
}

// labelProblem says what is wrong with one label, "" when nothing is.
func labelProblem(l string) string {
	switch {
	case l == "":
		return "an empty label (\"..\", or a leading dot)"
	case len(l) > maxLabelLen:
		return fmt.Sprintf("a label longer than %d bytes", maxLabelLen)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Sprintf("label %q starts or ends with '-'", l)
	}
	for i := range len(l) {
		c := l[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		case c >= 0x80:
			return "not an ASCII name: give its xn-- (punycode) form"
		default:
			return fmt.Sprintf("character %q is not allowed in a host name", c)
		}
	}
	return ""
}

// allHex reports whether s is hexadecimal digits only (lower case).
func allHex(s string) bool {
	for i := range len(s) {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return false
		}
	}
	return true
}

// allDigits reports whether s is decimal digits only.
func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// names returns the normalized entries, in order.
func (l allowList) names() []string {
	out := make([]string, len(l))
	for i, p := range l {
		out[i] = p.text
	}
	return out
}

// String is the list as a refusal names it: "a, *.b" or "none".
func (l allowList) String() string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l.names(), ", ")
}

// matchIP reports whether the IP literal ip is listed for port.
func (l allowList) matchIP(ip netip.Addr, port int) bool {
	for _, p := range l {
		if p.ip.IsValid() && p.ip == ip && p.admits(port) {
			return true
		}
	}
	return false
}

// matchName returns the entry that admits the normalized name host on port
// and whether that entry names it exactly; entry is "" when none does. An
// exact entry wins over a wildcard.
func (l allowList) matchName(host string, port int) (entry string, exact bool) {
	for _, p := range l {
		if !p.ip.IsValid() && p.suffix == "" && p.name == host && p.admits(port) {
			return p.text, true
		}
	}
	for _, p := range l {
		if p.suffix != "" && strings.HasSuffix(host, p.suffix) && p.admits(port) {
			return p.text, false
		}
	}
	return "", false
}

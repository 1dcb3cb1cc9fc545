package toolexec

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/netproxy"
)

// unreachable are the failures of a command with no network beyond
// loopback, as runtimes print them: no route (ENETUNREACH, Python's
// [Errno 101], Rust's NetworkUnreachable) and a name lookup with no
// resolver to reach (EAI_AGAIN, Python's [Errno -3], Node's ENOTFOUND,
// curl's (6), Java's UnknownHostException).
var unreachable = []string{
	"Network is unreachable", "network is unreachable", "ENETUNREACH", "[Errno 101]", "NetworkUnreachable",
	"Temporary failure in name resolution", "EAI_AGAIN", "[Errno -3]", "ENOTFOUND", "Could not resolve host",
	"UnknownHostException",
}

// curlConnect is curl's (7): `Failed to connect to HOST port N`.
var curlConnect = regexp.MustCompile(`Failed to connect to (\S+) port \d+`)

// goLookup is Go's resolver failing: `lookup HOST on SERVER: ...`, whatever
// the cause (no route to the server, or nothing listening at a loopback
// stub resolver inside the command's own network namespace).
var goLookup = regexp.MustCompile(`\blookup \S+ on \S+: `)

// socketRefusals are the refusals a socket(2) the seccomp filter blocks
// gives (EPERM).
var socketRefusals = []string{"Operation not permitted", "operation not permitted", "EPERM", "[Errno 1]"}

// inferNetworkDenial reports whether the stderr of a failed confined
// command shows the sandbox refusing it the network, and the detail line:
// without --network allow, one of unreachable, Go's resolver failing, or
// curl failing to connect to an address other than loopback; without --network allow or without
// --unix-sockets allow or a named socket, a socket refused with EPERM (a line with a
// socket refusal that, or one of the four lines before it, speaks of a
// socket, a connect or a dial). Like the file inference it reads only what
// the command printed.
func inferNetworkDenial(conf *exec.Confinement, stderr string) (string, bool) {
	lines := strings.Split(stderr, "\n")
	for i, line := range lines {
		if !conf.Network {
			if index(line, unreachable) >= 0 {
				return networkDetail(conf, spelling(line, unreachable)), true
			}
			if m := curlConnect.FindStringSubmatch(line); m != nil && !loopback(m[1]) {
				return networkDetail(conf, m[0]), true
			}
			if m := goLookup.FindString(line); m != "" {
				return networkDetail(conf, strings.TrimSuffix(m, ": ")), true
			}
		}
		if (!conf.Network || unixRefused(conf)) && index(line, socketRefusals) >= 0 {
			context := strings.ToLower(strings.Join(lines[max(0, i-4):i+1], "\n"))
			if strings.Contains(context, "socket") || strings.Contains(context, "connect") || strings.Contains(context, "dial") {
				return networkDetail(conf, spelling(line, socketRefusals)), true
			}
		}
	}
	return "", false
}

// spelling returns the first of spellings found in line.
func spelling(line string, spellings []string) string {
	for _, s := range spellings {
		if strings.Contains(line, s) {
			return s
		}
	}
	return ""
}

// loopback reports whether host (as curl prints it) is a loopback name or
// address, which a command keeps under --network deny.
func loopback(host string) bool {
	h, reason := netproxy.Host(host)
	if reason != "" {
		return false
	}
	what := netproxy.Local(h)
	return what == "loopback" || what == "localhost"
}

// unixRefused reports whether a command's socket(AF_UNIX) was refused:
// Unix sockets were not allowed, none was named (--unix-socket) and the
// command could not make its own.
func unixRefused(conf *exec.Confinement) bool {
	return !conf.UnixSockets && len(conf.UnixSocketPaths) == 0 && !conf.OwnUnixSockets
}

func networkDetail(conf *exec.Confinement, what string) string {
	var denied []string
	if !conf.Network {
		denied = append(denied, "--network deny: no network beyond loopback, no name lookups")
	}
	switch {
	case unixRefused(conf):
		denied = append(denied, "--unix-sockets deny: no Unix sockets")
	case !conf.UnixSockets && conf.OwnUnixSockets && len(conf.UnixSocketPaths) > 0:
		denied = append(denied, "--unix-sockets deny: no Unix sockets but the command's own, beneath its writable roots, and the named ones ("+strings.Join(conf.UnixSocketPaths, ", ")+")")
	case !conf.UnixSockets && conf.OwnUnixSockets:
		denied = append(denied, "--unix-sockets deny: no Unix sockets but the command's own, beneath its writable roots")
	case !conf.UnixSockets:
		denied = append(denied, "--unix-sockets deny: no Unix sockets but the named ones ("+strings.Join(conf.UnixSocketPaths, ", ")+")")
	}
	return "(inferred: the command failed and its stderr reports " +
		strconv.Quote(what) + "; commands run under " + strings.Join(denied, ", and ") +
		"; only danger-full-access runs a command without them)"
}

package sandboxpolicy

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/netproxy"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// eventHosts is the session event type that records network hosts the
// user allowed the session's commands to reach through the domain proxy
// (an "allow for the session" answer to a hosts prompt); its Data is a
// hostsEvent.
const eventHosts = "sandbox/hosts"

// hostsEvent is the payload of a "sandbox/hosts" event.
type hostsEvent struct {
	Hosts []string `json:"hosts"`
}

// MaxHosts is how many hosts one request may name.
const MaxHosts = 10

// localHosts returns those of hosts that name the server machine itself or
// a network that is not the public Internet, each quoted and followed by
// its kind ("localhost", "loopback", "private", "shared (CGNAT)", ...): the
// proxy's one rule, netproxy.Local. A grant of one reaches the services of the
// machine harness runs on or its networks, not the command's sandbox.
func localHosts(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if what := netproxy.Local(h); what != "" {
			out = append(out, strconv.Quote(h)+" ("+what+")")
		}
	}
	return out
}

// CleanHosts returns the hosts a call asks to reach, each in the form the
// proxy compares (netproxy.Host: a name lower-cased without a final dot,
// an address in its usual spelling), duplicates dropped: 1 to MaxHosts
// exact host names (letters, digits, '_' and '-'; no wildcard, no port, at
// most 253 bytes, a last label that is not a number) or IP addresses.
// Errors say which host is refused and why; nothing is granted.
func CleanHosts(hosts []string) ([]string, error) {
	if len(hosts) == 0 || len(hosts) > MaxHosts {
		return nil, fmt.Errorf("name 1 to %d hosts, got %d", MaxHosts, len(hosts))
	}
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		c, reason := netproxy.Host(h)
		if reason != "" {
			return nil, fmt.Errorf("%s is not a host name or an IP address in its usual spelling: %s", strconv.Quote(h), reason)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// GrantedHosts returns the hosts the user allowed the commands of s to
// reach for the rest of the session (EscalateHosts), in the order granted;
// none for a nil session, or one whose ceiling (SetCeiling) is read-only,
// even when granted before the ceiling was lowered (a read-only
// principal's commands get no network beyond the configured names).
func GrantedHosts(s *session.Session) []string {
	if s == nil || readOnlyCeiling(s) {
		return nil
	}
	var out []string
	for _, e := range s.Events() {
		if e.Type != eventHosts {
			continue
		}
		var hosts []string
		switch d := e.Data.(type) {
		case hostsEvent:
			hosts = d.Hosts
		case *hostsEvent:
			if d != nil {
				hosts = d.Hosts
			}
		}
		for _, h := range hosts {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// EscalateHosts asks approver to let one command of sess reach req.Hosts
// (CleanHosts' output) through the domain proxy, and reports whether the
// answer covers the rest of the session. Failing closed at each step: an
// approver must be composed and the call must have a session; then the
// outcome is mapped: allowed-once allows this command only (false);
// allowed-for-session also records the hosts as the session's grant
// (GrantedHosts) and returns true; rejected, cancelled and unavailable are
// refusals. A session whose ceiling (SetCeiling) is read-only is refused
// without asking: a read-only principal's commands get no network beyond
// the configured names (a ceiling of workspace-write or wider may ask).
// req.Family must be sandbox.Commands; Reason is filled in.
// Every failure is an *EscalationError (Mode empty): a refusal has
// CodeEscalationRefused; another family, an approver error, an unrecorded
// grant or an unknown outcome has CodeApprovalFailed.
func EscalateHosts(ctx context.Context, approver sandbox.Approver, sess *session.Session, req sandbox.ApprovalRequest) (bool, error) {
	what := "allowing the network hosts " + quoteAll(req.Hosts)
	fail := func(format string, args ...any) error {
		return &EscalationError{Code: CodeEscalationRefused, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case req.Family != sandbox.Commands || len(req.Hosts) == 0:
		return false, &EscalationError{Code: CodeApprovalFailed, Message: what + ": only a command may ask for network hosts, naming at least one"}
	case readOnlyCeiling(sess):
		return false, fail("%s is refused without asking: the principal's widest mode is %q, which reaches no network beyond the configured names", what, sandbox.ReadOnly)
	case approver == nil:
		return false, fail("%s requires approval, but no approval service is composed", what)
	case sess == nil:
		return false, fail("%s requires approval, but the call has no agent to route it through", what)
	}
	req.Reason = "allow network hosts " + strings.Join(req.Hosts, ", ") + ": " + req.Justification
	out, err := approver.Approve(ctx, req)
	if err != nil {
		return false, &EscalationError{Code: CodeApprovalFailed, Message: what + ": approval failed", Err: err}
	}
	switch out {
	case sandbox.AllowedOnce:
		return false, nil
	case sandbox.AllowedForSession:
		if err := sess.Append(session.Event{Type: eventHosts, Data: hostsEvent{Hosts: req.Hosts}}); err != nil {
			return false, &EscalationError{Code: CodeApprovalFailed, Message: what + ": the session grant was not recorded", Err: err}
		}
		return true, nil
	case sandbox.Rejected:
		return false, fail("the user rejected %s to this command", what)
	case sandbox.Cancelled:
		return false, fail("approval for %s was cancelled", what)
	case sandbox.Unavailable:
		return false, fail("%s requires approval, but no approval channel is available", what)
	default:
		return false, &EscalationError{Code: CodeApprovalFailed, Message: fmt.Sprintf("%s: unknown approval outcome %q", what, out)}
	}
}

// quoteAll quotes each host (every control or non-printing character
// escaped) and joins them with commas.
func quoteAll(hosts []string) string {
	q := make([]string, len(hosts))
	for i, h := range hosts {
		q[i] = strconv.Quote(h)
	}
	return strings.Join(q, ", ")
}

// readOnlyCeiling reports whether the ceiling of s is read-only.
func readOnlyCeiling(s *session.Session) bool {
	c, ok := Ceiling(s)
	return ok && c == sandbox.ReadOnly
}

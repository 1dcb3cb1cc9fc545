package sandboxpolicy

import (
	"errors"
	"fmt"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// eventCeiling is the session event type that caps the modes a session may
// run under or be granted (issue 26: its principal's widest mode); its Data
// is a ceilingEvent.
const eventCeiling = "sandbox/ceiling"

// ceilingEvent is the payload of a "sandbox/ceiling" event.
type ceilingEvent struct {
	Mode sandbox.Mode `json:"mode"`
}

// SetCeiling appends one "sandbox/ceiling" event carrying m to s: the
// widest mode s may run under or be granted from now on (an HTTP session's
// principal's widest mode). The session's ceiling is the narrowest one ever
// set (Ceiling): a later call can lower it, never raise it. Resolve clamps
// every mode of s to it, and Escalate, EscalateRead and EscalateHosts
// refuse what lies beyond it without asking the approver. An unknown m is
// recorded all the same, so the session fails closed to read-only, and is
// returned as an error naming the allowed values; with invariants enabled
// the package's companion reports it too (*invariants.Error). A nil
// session is an error and records nothing.
func SetCeiling(s *session.Session, m sandbox.Mode) error {
	if s == nil {
		return errors.New("sandboxpolicy: a ceiling needs a session")
	}
	if err := s.Append(session.Event{Type: eventCeiling, Data: ceilingEvent{Mode: m}}); err != nil {
		return err
	}
	if !m.Valid() {
		return fmt.Errorf("sandboxpolicy: unknown ceiling mode %q: allowed values are %s; the session is held to read-only", m, allowed())
	}
	return nil
}

// Ceiling returns the ceiling of s, the narrowest mode any
// "sandbox/ceiling" event of s carries, and true; "" and false when none
// was set (or s is nil): the session may be granted any mode. Fail closed:
// an event whose mode is unknown, or that carries no mode, counts as
// read-only.
func Ceiling(s *session.Session) (sandbox.Mode, bool) {
	if s == nil {
		return "", false
	}
	var c sandbox.Mode
	set := false
	for _, e := range s.Events() {
		if e.Type != eventCeiling {
			continue
		}
		m, ok := ceilingOf(e)
		if !ok || !m.Valid() {
			m = sandbox.ReadOnly
		}
		if !set || IsWider(c, m) {
			c, set = m, true
		}
	}
	return c, set
}

// ceilingOf returns the mode a "sandbox/ceiling" event carries ("" for a
// nil *ceilingEvent), and false when its data is not a ceiling event.
func ceilingOf(e session.Event) (sandbox.Mode, bool) {
	switch d := e.Data.(type) {
	case ceilingEvent:
		return d.Mode, true
	case *ceilingEvent:
		if d != nil {
			return d.Mode, true
		}
		return "", true
	}
	return "", false
}

// beyondCeiling returns the ceiling of s and true when m is wider than it;
// "" and false when s has no ceiling or m is within it.
func beyondCeiling(s *session.Session, m sandbox.Mode) (sandbox.Mode, bool) {
	c, ok := Ceiling(s)
	if !ok || !IsWider(m, c) {
		return "", false
	}
	return c, true
}

// ceilingRefused is the error of an escalation beyond the session's
// ceiling c: what is refused, without asking, and why.
func ceilingRefused(requested, c sandbox.Mode, what string) error {
	return refused(requested, "%s is refused without asking: the principal's widest mode is %q", what, c)
}

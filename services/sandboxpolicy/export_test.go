package sandboxpolicy

import (
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// OverrideOf is the standing mode the session's log gives the file tools.
func OverrideOf(s *session.Session) (sandbox.Mode, bool) {
	e, ok := lastMode(s, sandbox.FileTools)
	return e.Mode, ok
}

// Test-only views of unexported names.
var (
	Wider                = wider
	ErrInvalidEscalation = errInvalidEscalation
	DefaultTempRoots     = defaultTempRoots
)

// EventMode is the type of a "sandbox/mode" event.
const EventMode = eventMode

// ModeEvent is the payload of a "sandbox/mode" event.
type ModeEvent = modeEvent

// EventCeiling is the type of a "sandbox/ceiling" event.
const EventCeiling = eventCeiling

// CeilingEvent is the payload of a "sandbox/ceiling" event.
type CeilingEvent = ceilingEvent

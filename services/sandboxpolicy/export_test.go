package sandboxpolicy

// Test-only views of unexported names.
var (
	Wider                = wider
	ErrInvalidEscalation = errInvalidEscalation
	DefaultTempRoots     = defaultTempRoots
	OverrideOf           = overrideOf
)

// EventMode is the type of a "sandbox/mode" event.
const EventMode = eventMode

// ModeEvent is the payload of a "sandbox/mode" event.
type ModeEvent = modeEvent

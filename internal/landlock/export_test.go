//go:build linux

package landlock

// Unexported mechanics the external tests drive directly.
var (
	ProbeABI      = probeABI
	Unavailable   = unavailable
	HandledAccess = handledAccess
)

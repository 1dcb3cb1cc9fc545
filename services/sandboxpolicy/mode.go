// Package sandboxpolicy owns the policy side of the write fence: the sandbox
// modes, the per-call execution policy that rides on every mutation of an
// fs.Service, the writable roots, the per-session resolution of the policy,
// and the escalation vocabulary and choreography. It is data plus predicates:
// enforcement lives in fssandbox.
package sandboxpolicy

import (
	"fmt"
	"strings"
)

// Mode is a sandbox mode: how far a mutation may reach (spec P-17).
type Mode string

const (
	// ReadOnly denies every mutation.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite allows mutations beneath a writable root: the session
	// workspace root and the platform temp areas.
	WorkspaceWrite Mode = "workspace-write"
	// DangerFullAccess lets mutations reach anything the process can reach.
	DangerFullAccess Mode = "danger-full-access"
)

// Modes returns the three sandbox modes from narrowest to widest (spec P-17).
func Modes() []Mode {
	return []Mode{ReadOnly, WorkspaceWrite, DangerFullAccess}
}

// Valid reports whether m is one of the three sandbox modes.
func (m Mode) Valid() bool {
	switch m {
	case ReadOnly, WorkspaceWrite, DangerFullAccess:
		return true
	default:
		return false
	}
}

// String returns the mode's wire spelling, e.g. "workspace-write".
func (m Mode) String() string { return string(m) }

// ParseMode returns the Mode spelled s. An unknown spelling is an error that
// names the allowed values; it never falls back to a default.
func ParseMode(s string) (Mode, error) {
	m := Mode(s)
	if !m.Valid() {
		return "", fmt.Errorf("unknown sandbox mode %q: allowed values are %s", s, allowed())
	}
	return m, nil
}

func allowed() string {
	names := make([]string, 0, 3)
	for _, m := range Modes() {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ")
}

// ExecutionPolicy is the policy stamped on one mutation call: the effective
// mode and the workspace root it applies to (spec T-93, S-17). WorkspaceRoot
// is an absolute path; it matters only under WorkspaceWrite. SessionID names
// the session the policy was resolved for, empty when there is none (P-03).
type ExecutionPolicy struct {
	Mode          Mode
	WorkspaceRoot string
	SessionID     string
}

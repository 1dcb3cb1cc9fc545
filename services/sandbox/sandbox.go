// Package sandbox is the vocabulary of the write fence, shared by the
// filesystem seam, its backends and the policy service: the sandbox modes,
// the execution policy stamped on one mutation, the one definition of the
// writable-root set, the model-facing denial marker and escalation hint, and
// the owner of a call (the session's identity and working directory, as the
// seams see it). It is data plus pure functions: no I/O, no services.
//
// The policy service (sandboxpolicy) resolves policies per session and runs
// the escalation; the confining backend (fssandbox) enforces them.
package sandbox

import (
	"path/filepath"
	"slices"
	"strconv"
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
func (m Mode) Valid() bool { return slices.Contains(Modes(), m) }

// String returns the mode's wire spelling, e.g. "workspace-write".
func (m Mode) String() string { return string(m) }

// ExecutionPolicy is the policy one call runs under, with every root it
// names (issue 21: the policy carries its roots, so the file fence, the
// command runner, the tools and the approval prompt read one value and no
// caller passes a root list of its own): the effective mode and the
// workspace roots it applies to (spec T-93, S-17, deliberate difference 12).
// WorkspaceRoot is the first workspace root, the directory relative paths
// resolve against; OtherRoots are the session's further workspace roots
// (every root the client announced after the first). TempRoots are the
// platform temp areas (shared with other users) and ExtraRoots the
// deployment's further writable roots (--writable-root); the policy service
// sets both, canonical and pinned at its construction, on every policy it
// resolves. All are absolute canonical paths and grant writes only under
// WorkspaceWrite. An empty WorkspaceRoot means no workspace is set: no
// workspace root is writable. SessionID names the session the policy was
// resolved for, empty when there is none (P-03).
//
// SessionGrant is true when Mode is the session's standing mode that the
// user allowed, at an approval, for the rest of the session. Ceiling is the
// widest mode the session may run under or be granted (an HTTP session's
// principal's widest mode, issue 26), "" when it has none; Mode never
// exceeds it. Unasked, when set, says no one can be asked about this call's
// escalation (its client declared no elicitation, sandbox.Unasked): its
// denials say what to do instead of offering an escalation whose retry
// would be refused.
type ExecutionPolicy struct {
	Mode          Mode
	WorkspaceRoot string
	OtherRoots    []string
	TempRoots     []string
	ExtraRoots    []string
	SessionID     string
	SessionGrant  bool
	Ceiling       Mode
	Unasked       *Unattended
}

// WritableRoots returns the directories a mutation under p may reach,
// deduplicated, in order: the workspace roots (WorkspaceRoot, then
// OtherRoots), then TempRoots, then ExtraRoots. It is empty
// unless the mode is WorkspaceWrite (danger-full-access needs no list;
// read-only allows none). It is the only definition of the writable set.
//
// The roots are taken as the policy carries them, cleaned but not resolved
// again: the policy service canonicalized them when the policy was made, and
// resolving them anew would let a root later replaced by a symlink move the
// fence. Fail closed: a root that is not absolute, contains a NUL byte, or
// is "/" (which would make workspace-write as wide as danger-full-access,
// deliberate difference 12) grants nothing.
func (p ExecutionPolicy) WritableRoots() []string {
	if p.Mode != WorkspaceWrite {
		return nil
	}
	return p.Roots()
}

// Roots returns every root p names, in WritableRoots' order, whatever its
// mode: what may be writable under workspace-write, so a call may not
// delete or move one away in any mode.
func (p ExecutionPolicy) Roots() []string {
	roots := make([]string, 0, 1+len(p.OtherRoots)+len(p.TempRoots)+len(p.ExtraRoots))
	for _, group := range [][]string{{p.WorkspaceRoot}, p.OtherRoots, p.TempRoots, p.ExtraRoots} {
		for _, r := range group {
			if GrantableRoot(r) && !slices.Contains(roots, filepath.Clean(r)) {
				roots = append(roots, filepath.Clean(r))
			}
		}
	}
	return roots
}

// Shared reports whether root is one of p's temp areas, which other users
// write to as well.
func (p ExecutionPolicy) Shared(root string) bool {
	return slices.Contains(p.TempRoots, filepath.Clean(root))
}

// GrantableRoot reports whether r may be a writable root: an absolute path
// without a NUL byte that is not "/" once cleaned (deliberate difference 12).
func GrantableRoot(r string) bool {
	return filepath.IsAbs(r) && !strings.ContainsRune(r, 0) && filepath.Clean(r) != "/"
}

// Subjects of the escalation hint.
const (
	SubjectOperation = "operation" // a filesystem tool call
	SubjectCommand   = "command"   // a shell command
)

// DenialMarker is the model-facing line of a denied call:
// `[sandbox: file access denied under <mode> mode]`.
func DenialMarker(m Mode) string {
	return "[sandbox: file access denied under " + string(m) + " mode]"
}

// NetworkDenialMarker is the model-facing line of a command the sandbox
// refused the network (a socket, a connection, a name lookup) under mode m:
// `[sandbox: network access denied under <mode> mode]`.
func NetworkDenialMarker(m Mode) string {
	return "[sandbox: network access denied under " + string(m) + " mode]"
}

// NoWorkspaceMarker is the model-facing line of a call denied under
// workspace-write when the policy has no workspace root (the process ran
// from "/", the client announced no usable root, or the only root was "/").
const NoWorkspaceMarker = "[sandbox: no workspace is set: workspace-write allows writes only in the temp areas; the server needs --workspace DIR, or the client a file:// root other than /]"

// SessionGrantMarker is the model-facing line of a call denied under a mode
// the user allowed for the rest of the session (so asking again is
// pointless below that mode).
func SessionGrantMarker(m Mode) string {
	return "[sandbox: this session already runs under " + string(m) + ", which the user allowed for the session]"
}

// HostsHint is the model-facing line after the domain proxy refused hosts
// to a command: retry it asking for exactly those hosts (each quoted).
func HostsHint(hosts []string) string {
	q := make([]string, len(hosts))
	for i, h := range hosts {
		q[i] = strconv.Quote(h)
	}
	return "[sandbox: network escalation available — if the command needs them, retry this exact command with allow_hosts [" + strings.Join(q, ", ") +
		"] + justification; the approval prompt asks the user to allow them once or for the session]"
}

// EscalationHint is the model-facing line that says how to escalate;
// subject is SubjectOperation or SubjectCommand.
func EscalationHint(subject string) string {
	return "[sandbox: escalation available — retry this exact " + subject +
		" once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
}

// CeilingHint is the line that replaces the escalation hint of a call
// denied under a mode its session may not widen (ExecutionPolicy.Ceiling):
// an escalation beyond m is refused without asking, so retrying with
// sandbox_permissions is pointless.
func CeilingHint(m Mode) string {
	return "[sandbox: no escalation available — this session's widest mode is " + string(m) +
		" (its principal's); an escalation beyond it is refused without asking the user]"
}

// Owner is what the seams know of the session a call runs in: its identity
// and working directory. It is an opaque key compared by pointer (state kept
// per session, such as read-before-write records, is keyed by *Owner and
// lives as long as it); a nil *Owner is a call with no session. The session
// package makes one per session.
type Owner struct {
	id  string
	cwd string
}

// NewOwner returns the owner of the session id whose working directory is cwd
// (an absolute path, or "" when there is none).
func NewOwner(id, cwd string) *Owner { return &Owner{id: id, cwd: cwd} }

// ID returns the session's identity; "" for a nil owner.
func (o *Owner) ID() string {
	if o == nil {
		return ""
	}
	return o.id
}

// Cwd returns the session's working directory; "" for a nil owner or a
// session without one.
func (o *Owner) Cwd() string {
	if o == nil {
		return ""
	}
	return o.cwd
}

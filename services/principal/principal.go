// Package principal is the principals file of an HTTP server (issue 26):
// for each authenticated subject, the workspaces its sessions may use and
// the modes they may run under. Load reads and validates the file; a
// Principal answers what one subject's session starts with (StandingMode,
// Widest) and which of a client's roots count (Narrow), and Bind records
// them on a session. It decides nothing about a call: sandboxpolicy
// enforces the session's ceiling, the file fence and the command runner
// its roots.
//
// What it does not protect: the workspaces are canonicalized once, when the
// file is loaded; a workspace whose spelling is later made a symlink
// elsewhere keeps its canonical path here (the fence then pins each root at
// a session's first resolution).
package principal

import (
	"path/filepath"
	"slices"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Principal is one subject of the principals file.
type Principal struct {
	// Name is the subject, as the token names it.
	Name string
	// Workspaces are the principal's workspaces, at least one: absolute,
	// canonical (sandboxpolicy.CanonicalPath, then cleaned) existing
	// directories, never "/", no two the same, in the file's order.
	Workspaces []string
	// Mode is the standing mode of the principal's sessions; "" means the
	// server's mode, clamped to WidestMode (StandingMode).
	Mode sandbox.Mode
	// WidestMode is the widest mode a session of the principal may be
	// granted: an escalation beyond it is refused without asking. It is
	// Mode when the file sets only mode; "" when the file sets neither,
	// which means the server's mode (Widest).
	WidestMode sandbox.Mode
	// MaxConcurrentCalls caps the principal's calls in flight across all
	// its sessions; 0 means the server's --principal-max-calls.
	MaxConcurrentCalls int
}

// StandingMode returns the standing mode of a new session of p on a server
// whose --mode is serverMode: p.Mode when set; else serverMode clamped to
// p.WidestMode (the narrower of the two); else serverMode.
func (p *Principal) StandingMode(serverMode sandbox.Mode) sandbox.Mode {
	switch {
	case p.Mode != "":
		return p.Mode
	case p.WidestMode != "" && sandboxpolicy.IsWider(serverMode, p.WidestMode):
		return p.WidestMode
	default:
		return serverMode
	}
}

// Widest returns the ceiling of a session of p (sandboxpolicy.SetCeiling)
// on a server whose --mode is serverMode: p.WidestMode, or serverMode when
// the file set neither mode nor widest-mode.
func (p *Principal) Widest(serverMode sandbox.Mode) sandbox.Mode {
	if p.WidestMode != "" {
		return p.WidestMode
	}
	return serverMode
}

// Narrow returns the roots of a session of p whose client announced
// clientRoots (canonical absolute directories): those lying inside one of
// p.Workspaces, equal to it or beneath it by whole path components
// (/srv/alice2 is not inside /srv/alice), in the client's order without
// duplicates; when none does, a copy of p.Workspaces. A client's roots may
// narrow the principal's workspaces, never widen them: Bind's bounds hold
// the session to them again at each resolution, after the roots are
// canonicalized, so a root that becomes a symlink out before it is pinned
// is dropped there.
func (p *Principal) Narrow(clientRoots []string) []string {
	var out []string
	for _, r := range clientRoots {
		r = filepath.Clean(r)
		if slices.Contains(out, r) || !slices.ContainsFunc(p.Workspaces, func(w string) bool { return dirfd.Beneath(w, r) }) {
			continue
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return slices.Clone(p.Workspaces)
	}
	return out
}

// Set is the principals of one file, by name. It is read-only after Load
// and safe for concurrent use.
type Set struct {
	byName map[string]*Principal
}

// Lookup returns a copy of the principal named subject and true, or nil
// and false when the file does not name it (the server answers 403).
func (s *Set) Lookup(subject string) (*Principal, bool) {
	p, ok := s.byName[subject]
	if !ok {
		return nil, false
	}
	c := *p
	c.Workspaces = slices.Clone(p.Workspaces)
	return &c, true
}

// Names returns the principals' names, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

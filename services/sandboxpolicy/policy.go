package sandboxpolicy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/weakmap"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// eventMode is the session event type that switches a session's standing
// sandbox mode; its Data is a modeEvent (P-19).
const eventMode = "sandbox/mode"

// modeEvent is the payload of a "sandbox/mode" event; Granted marks a mode
// the user allowed for the rest of the session (sandbox.AllowedForSession), and
// Family what that answer covers ("" for a mode set for every family, as
// SetMode does).
type modeEvent struct {
	Mode    sandbox.Mode   `json:"mode"`
	Granted bool           `json:"granted,omitempty"`
	Family  sandbox.Family `json:"family,omitempty"`
}

// covers reports whether e applies to calls of family f: a mode set for
// every family, or a grant made for f.
func (e modeEvent) covers(f sandbox.Family) bool { return e.Family == "" || e.Family == f }

// SetMode appends exactly one "sandbox/mode" event carrying m to s (P-19):
// the session's standing mode for every family.
// It does not validate m itself: with invariants enabled, the package's
// companion reports an unknown mode as the returned *invariants.Error (the
// event is recorded either way, and resolving fails closed on it).
func SetMode(s *session.Session, m sandbox.Mode) error {
	return s.Append(session.Event{Type: eventMode, Data: modeEvent{Mode: m}})
}

// SessionGrant returns the standing mode of family f's calls in s when the
// user set it by answering "allow for this session" to a prompt of f, and
// true; "" and false when the last "sandbox/mode" event covering f is not
// such a grant, or there is none, or the grant is wider than the session's
// ceiling (set lower after the grant: the calls run under the ceiling, not
// the grant).
func SessionGrant(s *session.Session, f sandbox.Family) (sandbox.Mode, bool) {
	e, ok := lastMode(s, f)
	if !ok || !e.Granted {
		return "", false
	}
	if _, beyond := beyondCeiling(s, e.Mode); beyond {
		return "", false
	}
	return e.Mode, true
}

// lastMode folds the session's log: its last "sandbox/mode" event covering
// family f, and false when there is none (P-05, P-18).
func lastMode(s *session.Session, f sandbox.Family) (modeEvent, bool) {
	if s == nil {
		return modeEvent{}, false
	}
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != eventMode {
			continue
		}
		switch e := events[i].Data.(type) {
		case modeEvent:
			if e.covers(f) {
				return e, true
			}
		case *modeEvent:
			if e != nil && e.covers(f) {
				return *e, true
			}
		}
	}
	return modeEvent{}, false
}

// Service resolves the execution policy of each call. Its configuration is
// fixed at construction; the only state it keeps is each session's
// workspace roots, pinned at their first resolution. It is safe for
// concurrent use.
type Service struct {
	cfg Config
	// protect are the protected paths inside each writable root
	// (cfg.Protect and the version-control metadata).
	protect sandbox.ProtectedPaths
	// denyRead is the deny-read set, fixed at construction.
	denyRead sandbox.DenyRead
	// scanner searches the writable roots for the protected entries that
	// exist there (ProtectedEntries), caching the directories it read; its
	// one predicate is protect.ProtectedEntry.
	scanner *protectscan.Scanner
	// sessionRoots pins each session's canonical workspace root at its
	// first resolution: a cwd whose spelling is later made a symlink does
	// not move the session's fence.
	sessionRoots weakmap.Map[session.Session, string]
	// announced pins each announced root of a session (SetRoots) at its
	// first resolution, for as long as it stays announced.
	announced weakmap.Map[session.Session, *pins]
	// linkTargets are what the deny-read links led to (LinkTargets).
	linkTargets LinkTargets
}

// New returns the policy service for cfg; an unknown mode, a relative
// workspace root, a workspace root of "/" under workspace-write or a temp
// root of "/" is an error (P-09, deliberate difference 12).
func New(cfg Config) (*Service, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	denyRead, err := newDenyRead(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandboxpolicy: %w", err)
	}
	protect, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{
		Patterns: cfg.Protect, Unprotect: cfg.Unprotect, VCS: cfg.VCS,
		ConfigFile: cfg.ConfigFile, Executables: cfg.Executables, ConfigHome: configHome(), Homes: denyRead.Homes(),
	})
	if err != nil {
		return nil, fmt.Errorf("sandboxpolicy: %w", err)
	}
	return &Service{cfg: cfg, protect: protect, denyRead: denyRead, scanner: protectscan.New(protectscan.Options{SplitGit: protect.VCS() == sandbox.VCSCommit})}, nil
}

// Default returns the policy of a call with no session: the deployment
// default mode (S-01) and the fallback workspace root, with no session id
// (P-03). The workspace root is "" when there is none (the process ran
// from "/", or a configured "/" under a mode other than workspace-write).
func (s *Service) Default() sandbox.ExecutionPolicy {
	return s.withWorktrees(granted(s.base()))
}

// base is the deployment's policy before any session: its default mode, the
// fallback workspace root, and the temp and extra writable roots pinned at
// construction (each policy gets its own copies).
func (s *Service) base() sandbox.ExecutionPolicy {
	return sandbox.ExecutionPolicy{
		Mode: s.cfg.Mode, WorkspaceRoot: s.cfg.WorkspaceRoot,
		TempRoots: cloned(s.cfg.TempRoots), ExtraRoots: cloned(s.cfg.WritableRoots),
	}
}

// cloned returns a copy of roots, nil when there are none.
func cloned(roots []string) []string {
	if len(roots) == 0 {
		return nil
	}
	return slices.Clone(roots)
}

// Resolve returns the policy of one call of family f (P-03..P-08): approved
// (a granted escalation, "" for none) outranks the session's last
// "sandbox/mode" event covering f (a grant made for the other family does
// not count, issue 21), which outranks the deployment default. The workspace roots are, in order
// of precedence: the session's announced roots (its last SetRoots), each
// canonicalized once when first resolved and pinned while it stays
// announced; else the session's working directory, canonicalized and then
// resolved lexically (P-06) once, at the session's first resolution, and
// pinned for the session's life; else (no working directory, or a relative
// one) the configured fallback (P-08). A nil session gives Default, plus the
// approved mode when one is given. Under the resulting mode the roots are
// checked again: under workspace-write a root of "/" is dropped, so an
// escalation never turns a read-only deployment on "/" into an unlimited one
// (deliberate difference 12); WorkspaceRoot is "" when no root is left.
// A session's own temp roots (SetTempRoots) replace the deployment's. A
// session with bounds (SetBounds) keeps only the roots within them, else
// takes the bounds as its roots. Whichever mode wins, a session's ceiling
// (SetCeiling) caps it: a standing
// mode, a session grant or an approved mode wider than the ceiling resolves
// to the ceiling (and is then no session grant); the policy carries the
// ceiling (Ceiling) for the denial's hint.
func (s *Service) Resolve(sess *session.Session, f sandbox.Family, approved sandbox.Mode) sandbox.ExecutionPolicy {
	p := s.base()
	if sess != nil {
		p.SessionID = sess.ID()
		if e, ok := lastMode(sess, f); ok {
			p.Mode, p.SessionGrant = e.Mode, e.Granted
		}
		if temps, ok := tempRootsOf(sess); ok {
			p.TempRoots = cloned(temps)
		}
		if announced, ok := rootsOf(sess); ok {
			pinned, _ := s.announced.LoadOrStore(sess, &pins{})
			p.WorkspaceRoot, p.OtherRoots = split(pinned.canonical(announced))
		} else if cwd := sess.Cwd(); cwd != "" && filepath.IsAbs(cwd) && !strings.ContainsRune(cwd, 0) {
			root, ok := s.sessionRoots.Load(sess)
			if !ok {
				// Canonicalize only at the first resolution; later calls
				// take the pinned root without touching the filesystem.
				root, _ = s.sessionRoots.LoadOrStore(sess, filepath.Clean(CanonicalPath(cwd)))
			}
			p.WorkspaceRoot = root
		}
		if bounds, ok := boundsOf(sess); ok {
			// An HTTP session's roots stay within its principal's
			// workspaces (SetBounds), whatever was announced or pinned.
			p.WorkspaceRoot, p.OtherRoots = split(bounded(bounds, append([]string{p.WorkspaceRoot}, p.OtherRoots...)))
		}
	}
	if approved != "" && approved != p.Mode {
		p.Mode, p.SessionGrant = approved, false
	}
	if c, ok := Ceiling(sess); ok {
		p.Ceiling = c
		if IsWider(p.Mode, c) {
			p.Mode, p.SessionGrant = c, false
		}
	}
	return s.withWorktrees(granted(p))
}

// granted drops the roots p may not grant under its mode: under
// workspace-write, "/" (and anything not absolute); the first root left is
// the workspace root.
func granted(p sandbox.ExecutionPolicy) sandbox.ExecutionPolicy {
	if p.Mode != sandbox.WorkspaceWrite {
		return p
	}
	var roots []string
	for _, r := range append([]string{p.WorkspaceRoot}, p.OtherRoots...) {
		if sandbox.GrantableRoot(r) {
			roots = append(roots, r)
		}
	}
	p.WorkspaceRoot, p.OtherRoots = split(roots)
	return p
}

// split returns the first root ("" when there is none) and the others (nil
// when there are none).
func split(roots []string) (first string, others []string) {
	if len(roots) == 0 {
		return "", nil
	}
	if len(roots) > 1 {
		others = roots[1:]
	}
	return roots[0], others
}

// params are the fx inputs of Module; Config is optional.
type params struct {
	fx.In

	Config Config `optional:"true"`
}

func newFromParams(p params) (*Service, error) { return New(p.Config) }

// Module provides *sandboxpolicy.Service. Supply a sandboxpolicy.Config to
// configure it.
var Module = fx.Module("sandboxpolicy", fx.Provide(newFromParams))

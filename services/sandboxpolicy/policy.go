package sandboxpolicy

import (
	"path/filepath"
	"strings"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/internal/weakmap"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// eventMode is the session event type that switches a session's standing
// sandbox mode; its Data is a modeEvent (P-19).
const eventMode = "sandbox/mode"

// modeEvent is the payload of a "sandbox/mode" event.
type modeEvent struct {
	Mode sandbox.Mode `json:"mode"`
}

// SetMode appends exactly one "sandbox/mode" event carrying m to s (P-19).
// It does not validate m itself: with invariants enabled, the package's
// companion reports an unknown mode as the returned *invariants.Error (the
// event is recorded either way, and resolving fails closed on it).
func SetMode(s *session.Session, m sandbox.Mode) error {
	return s.Append(session.Event{Type: eventMode, Data: modeEvent{Mode: m}})
}

// overrideOf folds the session's log: the mode of its last "sandbox/mode"
// event, and false when there is none (P-05, P-18).
func overrideOf(s *session.Session) (sandbox.Mode, bool) {
	if s == nil {
		return "", false
	}
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != eventMode {
			continue
		}
		switch e := events[i].Data.(type) {
		case modeEvent:
			return e.Mode, true
		case *modeEvent:
			if e != nil {
				return e.Mode, true
			}
		}
	}
	return "", false
}

// Service resolves the execution policy of each call. Its configuration is
// fixed at construction; the only state it keeps is each session's workspace
// root, pinned at the session's first resolution. It is safe for concurrent
// use.
type Service struct {
	cfg Config
	// sessionRoots pins each session's canonical workspace root at its
	// first resolution: a cwd whose spelling is later made a symlink does
	// not move the session's fence.
	sessionRoots weakmap.Map[session.Session, string]
}

// New returns the policy service for cfg; an unknown mode, a relative
// workspace root or a temp root of "/" is an error (P-09).
func New(cfg Config) (*Service, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// Default returns the policy of a call with no session: the deployment
// default mode (S-01) and the fallback workspace root, with no session id
// (P-03).
func (s *Service) Default() sandbox.ExecutionPolicy {
	return sandbox.ExecutionPolicy{Mode: s.cfg.Mode, WorkspaceRoot: s.cfg.WorkspaceRoot}
}

// Resolve returns the policy of one call (P-03..P-08): approved (a granted
// escalation, "" for none) outranks the session's last "sandbox/mode" event,
// which outranks the deployment default. The workspace root is the session's
// working directory, canonicalized and then resolved lexically (P-06) once,
// at the session's first resolution, and pinned for the session's life; else
// (no working directory, or a relative one) the configured fallback (P-08). A nil session gives Default, plus the
// approved mode when one is given.
func (s *Service) Resolve(sess *session.Session, approved sandbox.Mode) sandbox.ExecutionPolicy {
	p := s.Default()
	if sess != nil {
		p.SessionID = sess.ID()
		if m, ok := overrideOf(sess); ok {
			p.Mode = m
		}
		if cwd := sess.Cwd(); cwd != "" && filepath.IsAbs(cwd) && !strings.ContainsRune(cwd, 0) {
			root, ok := s.sessionRoots.Load(sess)
			if !ok {
				// Canonicalize only at the first resolution; later calls
				// take the pinned root without touching the filesystem.
				root, _ = s.sessionRoots.LoadOrStore(sess, filepath.Clean(CanonicalPath(cwd)))
			}
			p.WorkspaceRoot = root
		}
	}
	if approved != "" {
		p.Mode = approved
	}
	return p
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

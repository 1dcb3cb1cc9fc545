package principal

import (
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// Bind holds the new session s to p on a server whose --mode is
// serverMode, before its first call: the ceiling Widest(serverMode)
// (sandboxpolicy.SetCeiling, set first so nothing resolves above it), the
// standing mode StandingMode(serverMode) (sandboxpolicy.SetMode), and the
// roots p.Workspaces (sandboxpolicy.SetRoots), so the session never falls
// back to the server's working directory. When the client announces its
// roots, the caller sets sandboxpolicy.SetRoots(s, p.Narrow(roots)). It
// returns the first error of the three (an invariant violation; each
// event is recorded all the same).
func (p *Principal) Bind(s *session.Session, serverMode sandbox.Mode) error {
	if err := sandboxpolicy.SetCeiling(s, p.Widest(serverMode)); err != nil {
		return err
	}
	if err := sandboxpolicy.SetMode(s, p.StandingMode(serverMode)); err != nil {
		return err
	}
	return sandboxpolicy.SetRoots(s, p.Workspaces)
}

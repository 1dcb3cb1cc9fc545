package principal

import (
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// Bind holds the new session s to p on a server whose --mode is
// serverMode, before its first call: the ceiling Widest(serverMode)
// (sandboxpolicy.SetCeiling, set first so nothing resolves above it), the
// bounds p.Workspaces (sandboxpolicy.SetBounds: the session's roots are
// its workspaces, or the client's roots within them, never the server's
// working directory), then the standing mode StandingMode(serverMode)
// (sandboxpolicy.SetMode). When the client announces its roots, the
// caller sets sandboxpolicy.SetRoots(s, p.Narrow(roots)). It returns the
// first error: a session already bound, or an invariant violation (the
// event is recorded all the same).
func (p *Principal) Bind(s *session.Session, serverMode sandbox.Mode) error {
	if err := sandboxpolicy.SetCeiling(s, p.Widest(serverMode)); err != nil {
		return err
	}
	if err := sandboxpolicy.SetBounds(s, p.Workspaces); err != nil {
		return err
	}
	return sandboxpolicy.SetMode(s, p.StandingMode(serverMode))
}

package sandboxpolicy

import (
	"context"
	"fmt"

	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/session"
)

// PackagePath is this package's import path: its name in the invariant
// registry.
const PackagePath = "github.com/dsh-go/harness/services/sandboxpolicy"

// checkModeEvent reports a "sandbox/mode" event whose mode is not one of the
// three (P-20); other events pass.
func checkModeEvent(in *invariants.Install, e session.Event) error {
	if e.Type != EventMode {
		return nil
	}
	var m Mode
	switch d := e.Data.(type) {
	case ModeEvent:
		m = d.Mode
	case *ModeEvent:
		if d != nil {
			m = d.Mode
		}
	default:
		return in.Fail(fmt.Sprintf("sandbox/mode carries no mode (data %T)", e.Data))
	}
	if !m.Valid() {
		return in.Fail("sandbox/mode carries unknown mode " + jsonQuote(string(m)))
	}
	return nil
}

// Invariants is this package's invariant companion (P-20): every
// "sandbox/mode" event carries a known mode. On registration it checks the
// events already in every live session (an unknown one rejects the
// registration), then every event appended to any session the
// *session.Tracker started; a violation is returned to whoever appended the
// event (SetMode returns it).
var Invariants = invariants.Companion(PackagePath, func(t *session.Tracker) invariants.Installer {
	return func(_ context.Context, in *invariants.Install) error {
		for _, s := range t.Sessions() {
			for _, e := range s.Events() {
				if err := checkModeEvent(in, e); err != nil {
					return err
				}
			}
		}
		in.OnCleanup(t.Observe(func(_ *session.Session, e session.Event) error { return checkModeEvent(in, e) }))
		return nil
	}
})

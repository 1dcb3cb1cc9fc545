package sandboxpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// checkModeEvent reports a "sandbox/mode" or "sandbox/ceiling" event whose
// mode is not one of the three (P-20, issue 26); other events pass.
func checkModeEvent(in *invariants.Install, e session.Event) error {
	var m sandbox.Mode
	ok := false
	switch e.Type {
	case eventMode:
		switch d := e.Data.(type) {
		case modeEvent:
			m, ok = d.Mode, true
		case *modeEvent:
			ok = true // a nil one carries the empty mode
			if d != nil {
				m = d.Mode
			}
		}
	case eventCeiling:
		m, ok = ceilingOf(e)
	default:
		return nil
	}
	switch {
	case !ok:
		return in.Fail(fmt.Sprintf("%s carries no mode (data %T)", e.Type, e.Data))
	case !m.Valid():
		return in.Fail(e.Type + " carries unknown mode " + jsonQuote(string(m)))
	}
	return nil
}

// Invariants returns the installer of this package's invariant (P-20): every
// "sandbox/mode" and "sandbox/ceiling" event carries a known mode. Installed, it checks the events
// already in every live session of t (an unknown one rejects the
// registration), then every event appended to any session t started; a
// violation is returned to whoever appended the event (SetMode and
// SetCeiling return it).
// The composition registers it under this package's import path with
// invariants.Companion.
func Invariants(t *session.Tracker) invariants.Installer {
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
}

// jsonQuote quotes s as JSON.stringify does: unlike json.Marshal, it leaves
// &, < and > unescaped.
func jsonQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

package fs

import (
	"context"
	"sync/atomic"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/session"
)

// PackagePath is this package's import path: its name in the invariant
// registry.
const PackagePath = "github.com/dsh-go/harness/services/fs"

// observationCheck is the fs companion's check: every
// observation that flows through the tool layer names a target with a
// non-empty key and display path, has a known kind, and, when present, a
// non-empty version. It is an Observer in the fs.observers group that checks
// only while its registration is installed.
type observationCheck struct {
	fail atomic.Pointer[func(string) error]
}

// Observe checks one observation.
func (c *observationCheck) Observe(_ *session.Session, target Target, obs Observation) error {
	failp := c.fail.Load()
	if failp == nil {
		return nil
	}
	fail := *failp
	switch {
	case target.Key == "":
		return fail("filesystem event targetKey must be non-empty")
	case target.DisplayPath == "":
		return fail("filesystem event displayPath must be non-empty")
	case obs.Kind != Present && obs.Kind != Absent:
		return fail("fs/observed kind must be present or absent")
	case obs.Kind == Present && obs.Version == "":
		return fail("fs/observed present version must be non-empty")
	}
	return nil
}

func (c *observationCheck) install(_ context.Context, in *invariants.Install) error {
	c.fail.Store(&in.Fail)
	in.OnCleanup(func() { c.fail.Store(nil) })
	return nil
}

// Invariants is this package's invariant companion: it contributes the
// observation check to the fs.observers group and registers it with the
// *invariants.Registry on start (unregisters on stop).
var Invariants = fx.Module("fs.invariants",
	fx.Provide(fx.Private, func() *observationCheck { return &observationCheck{} }),
	fx.Provide(fx.Annotate(func(c *observationCheck) Observer { return c }, fx.ResultTags(ObserverGroupTag))),
	invariants.Companion(PackagePath, func(c *observationCheck) invariants.Installer { return c.install }),
)

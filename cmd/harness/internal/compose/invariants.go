package compose

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Companions maps the import path of every package that owns a checkable
// relation to its invariant companion: the one list of the process's
// runtime checks. Each is registered with the *invariants.Registry on start
// (its checks run when the registry selects the package) and unregistered on
// stop.
//
//   - services/fs owns what an observation is: every
//     observation the tool layer reports names a target with a key and a
//     display path, has a known kind, and a present one has a version.
//   - services/sandboxpolicy owns the "sandbox/mode" event (P-20): every
//     one carries a known mode.
func Companions() map[string]fx.Option {
	fsPkg := reflect.TypeFor[fs.Target]().PkgPath()
	policyPkg := reflect.TypeFor[sandboxpolicy.Service]().PkgPath()
	return map[string]fx.Option{
		fsPkg: fx.Module("fs.invariants",
			fx.Provide(fx.Private, func() *observationCheck { return &observationCheck{} }),
			fx.Provide(fx.Annotate(func(c *observationCheck) fs.Observer { return c }, fx.ResultTags(fs.ObserverGroupTag))),
			invariants.Companion(fsPkg, func(c *observationCheck) invariants.Installer { return c.install }),
		),
		policyPkg: invariants.Companion(policyPkg, sandboxpolicy.Invariants),
	}
}

// companions returns every companion as one option, in a stable order.
func companions() fx.Option {
	all := Companions()
	opts := make([]fx.Option, 0, len(all))
	for _, pkg := range slices.Sorted(maps.Keys(all)) {
		opts = append(opts, all[pkg])
	}
	return fx.Options(opts...)
}

// observationCheck is the fs companion's check: an fs.Observer in the
// fs.observers group that checks each observation with
// fs.Observation.Check, only while its registration is installed.
type observationCheck struct {
	fail atomic.Pointer[func(string) error]
}

// Observe checks one observation.
func (c *observationCheck) Observe(_ *sandbox.Owner, target fs.Target, obs fs.Observation) error {
	failp := c.fail.Load()
	if failp == nil {
		return nil
	}
	if err := obs.Check(target); err != nil {
		return (*failp)(err.Error())
	}
	return nil
}

func (c *observationCheck) install(_ context.Context, in *invariants.Install) error {
	c.fail.Store(&in.Fail)
	in.OnCleanup(func() { c.fail.Store(nil) })
	return nil
}

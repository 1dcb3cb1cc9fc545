package fssandbox

import (
	"context"

	"github.com/dsh-go/harness/services/invariants"
)

// PackagePath is this package's import path: its name in the invariant
// registry.
const PackagePath = "github.com/dsh-go/harness/services/fssandbox"

// Invariants is this package's invariant companion: it reserves the
// package's name in the registry on start and releases it on stop.
var Invariants = invariants.Companion(PackagePath, func() invariants.Installer {
	// No runtime invariant: the fence is enforced by the kernel on every call, not observed after the fact; a check could only repeat the containment it already performs.
	return func(context.Context, *invariants.Install) error { return nil }
})

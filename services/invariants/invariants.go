package invariants

import (
	"context"
)

// PackagePath is this package's import path: its name in the invariant
// registry.
const PackagePath = "github.com/dsh-go/harness/services/invariants"

// Invariants is this package's invariant companion: it reserves the
// package's name in the registry on start and releases it on stop.
var Invariants = Companion(PackagePath, func() Installer {
	// No runtime invariant: the registry is what runs the checks; its own contracts are covered by its tests.
	return func(context.Context, *Install) error { return nil }
})

package tool

import (
	"context"

	"github.com/dsh-go/harness/services/invariants"
)

// PackagePath is this package's import path: its name in the invariant
// registry.
const PackagePath = "github.com/dsh-go/harness/services/tool"

// Invariants is this package's invariant companion: it reserves the
// package's name in the registry on start and releases it on stop.
var Invariants = invariants.Companion(PackagePath, func() invariants.Installer {
	// No runtime invariant: the tool vocabulary holds no state; what flows through the tools is checked by the fs companion.
	return func(context.Context, *invariants.Install) error { return nil }
})

package compose_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestEveryServicesPackageHasACompanion fails when a package under
// services/ has no invariant companion in compose.Companions. services/internal
// holds no service (only the backend core the services share), so it has none.
func TestEveryServicesPackageHasACompanion(t *testing.T) {
	_, here, _, ok := runtime.Caller(0)
	require.True(t, ok)
	servicesDir := filepath.Join(filepath.Dir(here), "..", "..", "..", "..", "services")
	entries, err := os.ReadDir(servicesDir)
	require.NoError(t, err)
	companions := compose.Companions()
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" {
			continue
		}
		dirs = append(dirs, e.Name())
		pkg := "github.com/dsh-go/harness/services/" + e.Name()
		assert.Contains(t, companions, pkg, "services/%s has no invariant companion in compose.Companions", e.Name())
	}
	assert.Len(t, companions, len(dirs), "every companion belongs to a services/ package")
}

// TestInvariantsComposition: the whole graph with the registry enabled and
// every companion starts and stops cleanly, every package is registered, and
// a deliberately broken sandbox/mode event is reported as an INVARIANT error
// naming the owning package.
func TestInvariantsComposition(t *testing.T) {
	cfg := config.Default()
	cfg.Workspace = t.TempDir()
	cfg.Invariants = true
	var (
		registry *invariants.Registry
		tracker  *session.Tracker
	)
	opts, err := compose.Options(cfg, io.Discard, fx.Populate(&registry, &tracker))
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()

	want := slices.Sorted(func(yield func(string) bool) {
		for pkg := range compose.Companions() {
			if !yield(pkg) {
				return
			}
		}
	})
	assert.Equal(t, want, registry.Registered())

	s := tracker.Start("s1", cfg.Workspace)
	require.NoError(t, sandboxpolicy.SetMode(s, sandboxpolicy.WorkspaceWrite))
	err = sandboxpolicy.SetMode(s, "host-root")
	require.Error(t, err)
	var inv *invariants.Error
	require.True(t, errors.As(err, &inv))
	assert.Equal(t, invariants.Code, inv.Code())
	assert.Equal(t, sandboxpolicy.PackagePath, inv.Package)
	assert.Equal(t, `invariant violated by "github.com/dsh-go/harness/services/sandboxpolicy": sandbox/mode carries unknown mode "host-root"`, err.Error())

	app.RequireStop()
	assert.Empty(t, registry.Registered(), "stop unregisters every companion")
	_, err = registry.Register(context.Background(), "late", func(context.Context, *invariants.Install) error { return nil })
	assert.ErrorContains(t, err, "inactive")
}

// TestInvariantsDisabledStillReserves: without --invariants the companions
// still reserve their names, and a broken event passes unchecked.
func TestInvariantsDisabledStillReserves(t *testing.T) {
	cfg := config.Default()
	cfg.Workspace = t.TempDir()
	var (
		registry *invariants.Registry
		tracker  *session.Tracker
	)
	opts, err := compose.Options(cfg, io.Discard, fx.Populate(&registry, &tracker))
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	defer app.RequireStop()
	assert.Len(t, registry.Registered(), len(compose.Companions()))
	assert.NoError(t, sandboxpolicy.SetMode(tracker.Start("s1", cfg.Workspace), "host-root"))
}

func TestOptionsRefusesAMissingWorkspace(t *testing.T) {
	cfg := config.Default()
	cfg.Workspace = filepath.Join(t.TempDir(), "missing")
	_, err := compose.Options(cfg, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--workspace")
}

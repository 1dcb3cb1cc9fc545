package compose_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestEveryCompanionChecksSomething: every companion compose registers
// catches a violation of the relation its package owns, reported as an
// INVARIANT error naming that package; a companion without a case here fails
// the test (an empty installer has nothing to show).
func TestEveryCompanionChecksSomething(t *testing.T) {
	type graph struct {
		tracker   *session.Tracker
		observers []fs.Observer
	}
	violations := map[string]func(g graph) error{
		"github.com/dsh-go/harness/services/fs": func(g graph) error {
			var errs []error
			for _, o := range g.observers {
				errs = append(errs, o.Observe(nil, fs.Target{Key: "/k", DisplayPath: "/k"}, fs.Observation{Kind: fs.Present}))
			}
			return errors.Join(errs...)
		},
		"github.com/dsh-go/harness/services/sandboxpolicy": func(g graph) error {
			return sandboxpolicy.SetMode(g.tracker.Start("s", ""), "host-root")
		},
	}
	assert.ElementsMatch(t, slices.Collect(maps.Keys(violations)), slices.Collect(maps.Keys(compose.Companions())),
		"every registered companion has a violation it catches, and only registered ones")

	for pkg, violate := range violations {
		t.Run(pkg, func(t *testing.T) {
			cfg := config.Default()
			cfg.Workspace = t.TempDir()
			cfg.Invariants = true
			var g graph
			opts, err := compose.Options(cfg, io.Discard, fx.Populate(&g.tracker),
				fx.Invoke(fx.Annotate(func(obs []fs.Observer) { g.observers = obs }, fx.ParamTags(fs.ObserverGroupTag))))
			require.NoError(t, err)
			app := fxtest.New(t, opts)
			app.RequireStart()
			defer app.RequireStop()
			err = violate(g)
			var inv *invariants.Error
			require.ErrorAs(t, err, &inv)
			assert.Equal(t, pkg, inv.Package)
		})
	}
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
	require.NoError(t, sandboxpolicy.SetMode(s, sandbox.WorkspaceWrite))
	err = sandboxpolicy.SetMode(s, "host-root")
	require.Error(t, err)
	var inv *invariants.Error
	require.True(t, errors.As(err, &inv))
	assert.EqualValues(t, invariants.Code, inv.Code)
	assert.Equal(t, "github.com/dsh-go/harness/services/sandboxpolicy", inv.Package)
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

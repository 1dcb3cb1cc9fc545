package compose_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

const fsPkg = "github.com/dsh-go/harness/services/fs"

var (
	goodTarget = fs.Target{Key: "/real/ws/a.txt", DisplayPath: "/ws/a.txt"}
	sess       = sandbox.NewOwner("s", "/ws")
)

// companionApp is an fx app with the invariants registry configured by cfg,
// the session module and the fs companion; it returns the app (not started),
// the members of the fs.observers group and the registry.
func companionApp(t *testing.T, cfg invariants.Config) (*fxtest.App, []fs.Observer, *invariants.Registry) {
	t.Helper()
	var (
		observers []fs.Observer
		registry  *invariants.Registry
	)
	app := fxtest.New(t,
		fx.NopLogger,
		invariants.Module,
		fx.Supply(cfg),
		session.Module,
		compose.Companions()[fsPkg],
		fx.Invoke(fx.Annotate(func(obs []fs.Observer) { observers = obs }, fx.ParamTags(`group:"fs.observers"`))),
		fx.Populate(&registry),
	)
	require.Len(t, observers, 1, "the fs companion contributes one member to fs.observers")
	require.NotNil(t, registry)
	return app, observers, registry
}

// startedCheck starts a companion app with invariants enabled and returns the
// fs companion's observer; the app is stopped at the end of the test.
func startedCheck(t *testing.T) (fs.Observer, *fxtest.App) {
	t.Helper()
	app, observers, _ := companionApp(t, invariants.Config{Enabled: true})
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return observers[0], app
}

// requireViolation asserts err is the fs companion's violation with message.
func requireViolation(t *testing.T, err error, message string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, invariants.ErrInvariant)
	var ie *invariants.Error
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, fsPkg, ie.Package)
	assert.EqualValues(t, "INVARIANT", ie.Code)
	assert.Equal(t, message, ie.Message)
	assert.Equal(t, `invariant violated by "github.com/dsh-go/harness/services/fs": `+message, err.Error())
}

func TestFSCompanionAcceptsValidObservations(t *testing.T) {
	check, _ := startedCheck(t)
	tests := []struct {
		name   string
		target fs.Target
		obs    fs.Observation
	}{
		{name: "A-11 a present observation with a version passes", target: goodTarget, obs: fs.Observation{Kind: fs.Present, Version: "1:2:3:4:5"}},
		{name: "A-11 an absent observation passes", target: goodTarget, obs: fs.Observation{Kind: fs.Absent}},
		{name: "A-11 an absent observation needs no version (one left over is not checked)", target: goodTarget, obs: fs.Observation{Kind: fs.Absent, Version: "stale"}},
		{name: "A-11 key and display path may differ (a symlinked path)", target: fs.Target{Key: "/real/b", DisplayPath: "/link/b"}, obs: fs.Observation{Kind: fs.Present, Version: "v"}},
		{name: "A-11 a relative-looking display path is not the companion's concern", target: fs.Target{Key: "k", DisplayPath: "d"}, obs: fs.Observation{Kind: fs.Absent}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, check.Observe(sess, tc.target, tc.obs))
			require.NoError(t, check.Observe(nil, tc.target, tc.obs), "a call without a session is checked the same way")
		})
	}
}

func TestFSCompanionRejectsMalformedObservations(t *testing.T) {
	check, _ := startedCheck(t)
	const (
		emptyKey     = "filesystem event targetKey must be non-empty"
		emptyDisplay = "filesystem event displayPath must be non-empty"
		emptyVersion = "fs/observed present version must be non-empty"
		unknownKind  = "fs/observed kind must be present or absent, or moved"
	)
	tests := []struct {
		name   string
		target fs.Target
		obs    fs.Observation
		want   string
	}{
		{name: "A-12 an empty targetKey (present)", target: fs.Target{DisplayPath: "/ws/a.txt"}, obs: fs.Observation{Kind: fs.Present, Version: "v"}, want: emptyKey},
		{name: "A-12 an empty targetKey (absent)", target: fs.Target{DisplayPath: "/ws/a.txt"}, obs: fs.Observation{Kind: fs.Absent}, want: emptyKey},
		{name: "A-12 an empty displayPath (present)", target: fs.Target{Key: "/real/ws/a.txt"}, obs: fs.Observation{Kind: fs.Present, Version: "v"}, want: emptyDisplay},
		{name: "A-12 an empty displayPath (absent)", target: fs.Target{Key: "/real/ws/a.txt"}, obs: fs.Observation{Kind: fs.Absent}, want: emptyDisplay},
		{name: "A-12 a present observation with an empty version", target: goodTarget, obs: fs.Observation{Kind: fs.Present}, want: emptyVersion},
		{name: "A-12 an empty kind", target: goodTarget, obs: fs.Observation{Version: "v"}, want: unknownKind},
		{name: "A-12 an unknown kind", target: goodTarget, obs: fs.Observation{Kind: "deleted", Version: "v"}, want: unknownKind},
		{name: "A-12 kinds are case-sensitive", target: goodTarget, obs: fs.Observation{Kind: "Present", Version: "v"}, want: unknownKind},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireViolation(t, check.Observe(sess, tc.target, tc.obs), tc.want)
		})
	}

	t.Run("A-12 an empty target with a good observation reports the targetKey first", func(t *testing.T) {
		requireViolation(t, check.Observe(sess, fs.Target{}, fs.Observation{Kind: fs.Absent}), emptyKey)
	})

	t.Run("A-12 a violation does not disable the check: a later good observation passes, a later bad one fails", func(t *testing.T) {
		requireViolation(t, check.Observe(sess, goodTarget, fs.Observation{Kind: fs.Present}), emptyVersion)
		require.NoError(t, check.Observe(sess, goodTarget, fs.Observation{Kind: fs.Present, Version: "v"}))
		requireViolation(t, check.Observe(sess, goodTarget, fs.Observation{Kind: fs.Present}), emptyVersion)
	})
}

func TestFSCompanionInstalledOnlyWhileRegistered(t *testing.T) {
	bad := fs.Observation{Kind: fs.Present} // present without a version

	t.Run("with invariants disabled the same bad observation passes (nothing installed)", func(t *testing.T) {
		app, observers, registry := companionApp(t, invariants.Config{Enabled: false})
		app.RequireStart()
		defer app.RequireStop()
		assert.Equal(t, []string{fsPkg}, registry.Registered(), "the name is reserved all the same")
		assert.False(t, registry.Selected(fsPkg))
		require.NoError(t, observers[0].Observe(sess, goodTarget, bad))
		require.NoError(t, observers[0].Observe(sess, fs.Target{}, fs.Observation{Kind: "bogus"}))
	})

	t.Run("with the fs package blocked the same bad observation passes", func(t *testing.T) {
		app, observers, registry := companionApp(t, invariants.Config{Enabled: true, Block: []string{`services/fs$`}})
		app.RequireStart()
		defer app.RequireStop()
		assert.Equal(t, []string{fsPkg}, registry.Registered())
		require.NoError(t, observers[0].Observe(sess, goodTarget, bad))
	})

	t.Run("before the app starts the check is not installed", func(t *testing.T) {
		app, observers, _ := companionApp(t, invariants.Config{Enabled: true})
		require.NoError(t, observers[0].Observe(sess, goodTarget, bad))
		app.RequireStart()
		defer app.RequireStop()
		requireViolation(t, observers[0].Observe(sess, goodTarget, bad), "fs/observed present version must be non-empty")
	})

	t.Run("after RequireStop the check is uninstalled and its name released", func(t *testing.T) {
		app, observers, registry := companionApp(t, invariants.Config{Enabled: true})
		app.RequireStart()
		assert.Equal(t, []string{fsPkg}, registry.Registered())
		requireViolation(t, observers[0].Observe(sess, goodTarget, bad), "fs/observed present version must be non-empty")

		app.RequireStop()
		assert.Empty(t, registry.Registered())
		require.NoError(t, observers[0].Observe(sess, goodTarget, bad), "the stopped app's check no longer runs")
		require.NoError(t, observers[0].Observe(sess, fs.Target{}, fs.Observation{Kind: "bogus"}))
	})

	t.Run("a second app started after the first stops checks afresh; the first app's observer stays off", func(t *testing.T) {
		app1, observers1, _ := companionApp(t, invariants.Config{Enabled: true})
		app1.RequireStart()
		app1.RequireStop()

		app2, observers2, _ := companionApp(t, invariants.Config{Enabled: true})
		app2.RequireStart()
		defer app2.RequireStop()
		require.NoError(t, observers1[0].Observe(sess, goodTarget, bad))
		requireViolation(t, observers2[0].Observe(sess, goodTarget, bad), "fs/observed present version must be non-empty")
	})

	t.Run("observations racing with start and stop are checked or passed, never torn", func(t *testing.T) {
		app, observers, _ := companionApp(t, invariants.Config{Enabled: true})
		var (
			stop       atomic.Bool
			wg         sync.WaitGroup
			unexpected atomic.Int64
		)
		for range 4 {
			wg.Go(func() {
				for !stop.Load() {
					err := observers[0].Observe(sess, goodTarget, bad)
					if err == nil {
						continue
					}
					var ie *invariants.Error
					if !assert.ErrorAs(t, err, &ie) || ie.Message != "fs/observed present version must be non-empty" {
						unexpected.Add(1)
					}
				}
			})
		}
		app.RequireStart()
		app.RequireStop()
		stop.Store(true)
		wg.Wait()
		assert.Zero(t, unexpected.Load())
	})
}

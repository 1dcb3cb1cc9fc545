package invariants_test

import (
	"context"
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/services/invariants"
)

const (
	sessionPkg      = "github.com/dsh-go/harness/services/session"
	sessionExtraPkg = "github.com/dsh-go/harness/services/session-extra"
	fsPkg           = "github.com/dsh-go/harness/services/fs"
	fakePkg         = "example.com/fake/widgets"

	waitFor = 5 * time.Second
)

// mustNew returns a registry for cfg and fails the test on a config error.
func mustNew(t *testing.T, cfg invariants.Config) *invariants.Registry {
	t.Helper()
	r, err := invariants.New(cfg)
	require.NoError(t, err)
	require.NotNil(t, r)
	return r
}

// noop is an installer that installs nothing.
func noop(context.Context, *invariants.Install) error { return nil }

// installs registers pkg on r with an installer that notes it ran, removes
// the registration again, and reports whether the installer ran.
func installs(t *testing.T, r *invariants.Registry, pkg string) bool {
	t.Helper()
	ran := false
	unregister, err := r.Register(context.Background(), pkg, func(_ context.Context, in *invariants.Install) error {
		ran = true
		assert.Equal(t, pkg, in.Package, "the installer is told its package")
		assert.NotNil(t, in.Fail, "a running installer gets a Fail")
		return nil
	})
	require.NoError(t, err)
	require.NotNil(t, unregister)
	unregister()
	assert.NotContains(t, r.Registered(), pkg, "unregistering releases the name")
	return ran
}

// alreadyRegistered is the I-08 message for pkg.
func alreadyRegistered(pkg string) string {
	return fmt.Sprintf("invariants: package %q is already registered", pkg)
}

// recv waits for a value on ch, failing the test after waitFor.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		require.FailNow(t, "timed out waiting for "+what)
		var zero T
		return zero
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Run("I-01 (Go port) the zero Config is disabled: nothing is selected and no installer runs", func(t *testing.T) {
		var cfg invariants.Config
		assert.False(t, cfg.Enabled, "checking is off unless the binary passes --invariants")
		assert.Nil(t, cfg.Allow)
		assert.Nil(t, cfg.Block)

		r := mustNew(t, cfg)
		assert.False(t, r.Selected(sessionPkg))
		assert.False(t, r.Selected(fakePkg))
		assert.False(t, installs(t, r, sessionPkg))
	})

	t.Run("I-01 enabled with nil lists (direct construction) admits every package and blocks none", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		for _, pkg := range []string{sessionPkg, sessionExtraPkg, fsPkg, fakePkg, "x"} {
			assert.True(t, r.Selected(pkg), pkg)
			assert.True(t, installs(t, r, pkg), pkg)
		}
	})

	t.Run("I-01 enabled with empty non-nil lists behaves the same as nil lists", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true, Allow: []string{}, Block: []string{}})
		for _, pkg := range []string{sessionPkg, fsPkg, fakePkg} {
			assert.True(t, r.Selected(pkg), pkg)
			assert.True(t, installs(t, r, pkg), pkg)
		}
	})
}

func TestSelection(t *testing.T) {
	tests := []struct {
		name string
		cfg  invariants.Config
		want map[string]bool
	}{
		{
			name: "I-02 disabled selects nothing even when allowed",
			cfg:  invariants.Config{Enabled: false, Allow: []string{"session"}},
			want: map[string]bool{sessionPkg: false, fsPkg: false},
		},
		{
			name: "I-02 a non-empty allow list admits only the matching packages",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"services/fs$"}},
			want: map[string]bool{fsPkg: true, sessionPkg: false, fakePkg: false},
		},
		{
			name: "I-02 any allow entry matching is enough",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"nomatch", "widgets", "services/fs$"}},
			want: map[string]bool{fsPkg: true, fakePkg: true, sessionPkg: false},
		},
		{
			name: "I-02 a block entry excludes the matching packages, others still run",
			cfg:  invariants.Config{Enabled: true, Block: []string{"session"}},
			want: map[string]bool{sessionPkg: false, sessionExtraPkg: false, fsPkg: true, fakePkg: true},
		},
		{
			name: "I-02 block wins when the same pattern is in both lists",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"session"}, Block: []string{"session"}},
			want: map[string]bool{sessionPkg: false, sessionExtraPkg: false, fsPkg: false},
		},
		{
			name: "I-02 block wins when a package is matched by both lists through different patterns",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"services/"}, Block: []string{"extra$"}},
			want: map[string]bool{sessionPkg: true, fsPkg: true, sessionExtraPkg: false, fakePkg: false},
		},
		{
			name: "I-03 patterns are unanchored: session matches session-extra",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"session"}},
			want: map[string]bool{sessionPkg: true, sessionExtraPkg: true, fsPkg: false},
		},
		{
			name: "I-03 ^...$ anchors the pattern to the whole import path",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"^github\\.com/dsh-go/harness/services/session$"}},
			want: map[string]bool{sessionPkg: true, sessionExtraPkg: false, fsPkg: false},
		},
		{
			name: "I-03 an anchored block entry excludes only the exact package",
			cfg:  invariants.Config{Enabled: true, Block: []string{"^github\\.com/dsh-go/harness/services/session$"}},
			want: map[string]bool{sessionPkg: false, sessionExtraPkg: true, fsPkg: true},
		},
		{
			name: "I-03 patterns are case-sensitive: Session does not match lowercase",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"Session"}},
			want: map[string]bool{sessionPkg: false, sessionExtraPkg: false},
		},
		{
			name: "I-03 a case-sensitive block entry does not exclude lowercase",
			cfg:  invariants.Config{Enabled: true, Block: []string{"Session"}},
			want: map[string]bool{sessionPkg: true, sessionExtraPkg: true},
		},
		{
			name: "I-03 an RE2 inline flag can opt into case-insensitivity",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"(?i)Session"}},
			want: map[string]bool{sessionPkg: true, fsPkg: false},
		},
		{
			name: "I-04 an allow pattern that matches nothing now is valid and selects nothing",
			cfg:  invariants.Config{Enabled: true, Allow: []string{"^example\\.org/later$"}},
			want: map[string]bool{sessionPkg: false, fsPkg: false, fakePkg: false, "example.org/later": true},
		},
		{
			name: "I-04 a block pattern that matches nothing now is valid and excludes nothing",
			cfg:  invariants.Config{Enabled: true, Block: []string{"^example\\.org/later$"}},
			want: map[string]bool{sessionPkg: true, fsPkg: true, "example.org/later": false},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustNew(t, tc.cfg)
			for pkg, want := range tc.want {
				assert.Equal(t, want, r.Selected(pkg), "Selected(%q)", pkg)
				assert.Equal(t, want, installs(t, r, pkg), "installer of %q ran", pkg)
			}
		})
	}
}

func TestUnselectedPackageStillReservesItsName(t *testing.T) {
	tests := []struct {
		name string
		cfg  invariants.Config
	}{
		{name: "I-05 disabled: the installer never runs, the name is still reserved", cfg: invariants.Config{}},
		{name: "I-05 disabled with allow entries: the installer never runs, the name is still reserved", cfg: invariants.Config{Allow: []string{"session"}}},
		{name: "I-02 blocked: the installer never runs, the name is still reserved", cfg: invariants.Config{Enabled: true, Block: []string{"session"}}},
		{name: "I-04 not allowed: the installer never runs, the name is still reserved", cfg: invariants.Config{Enabled: true, Allow: []string{"^nothing$"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustNew(t, tc.cfg)
			ran := false
			unregister, err := r.Register(context.Background(), sessionPkg, func(context.Context, *invariants.Install) error {
				ran = true
				return nil
			})
			require.NoError(t, err)
			require.NotNil(t, unregister)
			assert.False(t, ran, "the installer never runs")
			assert.Equal(t, []string{sessionPkg}, r.Registered())

			second, err := r.Register(context.Background(), sessionPkg, func(context.Context, *invariants.Install) error {
				ran = true
				return nil
			})
			require.EqualError(t, err, `invariants: package "github.com/dsh-go/harness/services/session" is already registered`)
			assert.Nil(t, second)
			assert.False(t, ran)

			unregister()
			assert.Empty(t, r.Registered())
			again, err := r.Register(context.Background(), sessionPkg, noop)
			require.NoError(t, err, "the name is free again after unregistering")
			again()
		})
	}
}

func TestConfigValidation(t *testing.T) {
	const (
		blankAllow = "invariants: Allow entries must be non-blank and have no surrounding whitespace"
		blankBlock = "invariants: Block entries must be non-blank and have no surrounding whitespace"
	)
	tests := []struct {
		name string
		cfg  invariants.Config
		want string
	}{
		{name: "I-06 an empty Allow entry", cfg: invariants.Config{Allow: []string{""}}, want: blankAllow},
		{name: "I-06 a whitespace-only Allow entry", cfg: invariants.Config{Allow: []string{" \t\n"}}, want: blankAllow},
		{name: "I-06 an Allow entry with leading whitespace", cfg: invariants.Config{Allow: []string{" session"}}, want: blankAllow},
		{name: "I-06 an Allow entry with trailing whitespace", cfg: invariants.Config{Allow: []string{"session\n"}}, want: blankAllow},
		{name: "I-06 a blank Allow entry after a good one", cfg: invariants.Config{Allow: []string{"session", ""}}, want: blankAllow},
		{name: "I-06 a duplicate Allow entry", cfg: invariants.Config{Allow: []string{"session", "fs", "session"}}, want: `invariants: Allow contains duplicate regex "session"`},
		{
			// The spec text `invariants: Allow contains invalid regex "("` is
			// followed by ": " and the RE2 parse error (kept with %w).
			name: "I-06 an invalid Allow entry",
			cfg:  invariants.Config{Allow: []string{"("}},
			want: "invariants: Allow contains invalid regex \"(\": error parsing regexp: missing closing ): `(`",
		},
		{name: "I-06 an empty Block entry", cfg: invariants.Config{Block: []string{""}}, want: blankBlock},
		{name: "I-06 a whitespace-only Block entry", cfg: invariants.Config{Block: []string{"   "}}, want: blankBlock},
		{name: "I-06 a Block entry with leading whitespace", cfg: invariants.Config{Block: []string{"\tsession"}}, want: blankBlock},
		{name: "I-06 a Block entry with trailing whitespace", cfg: invariants.Config{Block: []string{"session "}}, want: blankBlock},
		{name: "I-06 a duplicate Block entry", cfg: invariants.Config{Block: []string{`^a\.b$`, `^a\.b$`}}, want: `invariants: Block contains duplicate regex "^a\\.b$"`},
		{
			name: "I-06 an invalid Block entry",
			cfg:  invariants.Config{Block: []string{"[z-a]"}},
			want: "invariants: Block contains invalid regex \"[z-a]\": error parsing regexp: invalid character class range: `z-a`",
		},
		{
			name: "I-06 the same entry in Allow and Block is not a duplicate, and Allow is checked first",
			cfg:  invariants.Config{Allow: []string{"a", ""}, Block: []string{"a", "a"}},
			want: blankAllow,
		},
		{
			name: "I-06 invalid lists fail even when disabled",
			cfg:  invariants.Config{Enabled: false, Block: []string{"x", "x"}},
			want: `invariants: Block contains duplicate regex "x"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := invariants.New(tc.cfg)
			require.EqualError(t, err, tc.want)
			assert.Nil(t, r)
		})
	}

	t.Run("I-06 an invalid regex error wraps the RE2 syntax error", func(t *testing.T) {
		_, err := invariants.New(invariants.Config{Allow: []string{"("}})
		var syn *syntax.Error
		require.ErrorAs(t, err, &syn)
		assert.EqualValues(t, syntax.ErrMissingParen, syn.Code)
	})

	t.Run("I-06 the same entry in both lists is valid", func(t *testing.T) {
		mustNew(t, invariants.Config{Enabled: true, Allow: []string{"a"}, Block: []string{"a"}})
	})

	t.Run("I-06 a bad Config fails the fx app at startup", func(t *testing.T) {
		var r *invariants.Registry
		app := fx.New(fx.NopLogger, invariants.Module,
			fx.Supply(invariants.Config{Enabled: true, Allow: []string{" session"}}),
			fx.Populate(&r))
		err := app.Err()
		require.Error(t, err)
		assert.Contains(t, err.Error(), blankAllow)
		assert.Nil(t, r)
	})
}

func TestRegisterRejectsInvalidPackageName(t *testing.T) {
	const want = "invariants: packageName must be non-blank and contain no whitespace"
	names := []struct{ name, pkg string }{
		{name: "I-07 empty", pkg: ""},
		{name: "I-07 a space", pkg: " "},
		{name: "I-07 whitespace only", pkg: " \t\r\n"},
		{name: "I-07 leading whitespace", pkg: " " + fakePkg},
		{name: "I-07 trailing whitespace", pkg: fakePkg + "\t"},
		{name: "I-07 internal whitespace", pkg: "example.com/fake widgets"},
		{name: "I-07 a newline", pkg: "example.com/fake\nwidgets"},
		{name: "I-07 a trailing newline", pkg: fakePkg + "\n"},
		{name: "I-07 a non-ASCII space (U+00A0)", pkg: "example.com/fake\u00a0widgets"},
	}
	for _, tc := range names {
		t.Run(tc.name, func(t *testing.T) {
			for _, cfg := range []invariants.Config{{Enabled: true}, {}} {
				r := mustNew(t, cfg)
				ran := false
				unregister, err := r.Register(context.Background(), tc.pkg, func(context.Context, *invariants.Install) error {
					ran = true
					return nil
				})
				require.EqualError(t, err, want)
				assert.Nil(t, unregister)
				assert.False(t, ran)
				assert.Empty(t, r.Registered(), "nothing is reserved")
			}
		})
	}
}

func TestRegisterRejectsDuplicate(t *testing.T) {
	t.Run("I-08 a second active registration of the same name fails; the first stays installed", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		firstCleaned := false
		unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			in.OnCleanup(func() { firstCleaned = true })
			return nil
		})
		require.NoError(t, err)

		secondRan := false
		second, err := r.Register(context.Background(), fakePkg, func(context.Context, *invariants.Install) error {
			secondRan = true
			return nil
		})
		require.EqualError(t, err, alreadyRegistered(fakePkg))
		assert.Equal(t, `invariants: package "example.com/fake/widgets" is already registered`, err.Error())
		assert.Nil(t, second)
		assert.False(t, secondRan, "the second installer never runs")
		assert.False(t, firstCleaned, "the failed duplicate does not disturb the first registration")
		assert.Equal(t, []string{fakePkg}, r.Registered())

		unregister()
		assert.True(t, firstCleaned)
	})

	t.Run("I-08 different names register independently", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		u1, err := r.Register(context.Background(), sessionPkg, noop)
		require.NoError(t, err)
		u2, err := r.Register(context.Background(), sessionExtraPkg, noop)
		require.NoError(t, err, "a name that another name is a prefix of is a different name")
		assert.Equal(t, []string{sessionPkg, sessionExtraPkg}, r.Registered())
		u1()
		u2()
	})
}

func TestRegisteredIsSorted(t *testing.T) {
	r := mustNew(t, invariants.Config{})
	assert.NotNil(t, r.Registered(), "an empty registry lists no names")
	assert.Empty(t, r.Registered())

	names := []string{"zeta", fsPkg, "alpha", sessionPkg, "Beta", sessionExtraPkg}
	unregisters := map[string]func(){}
	for _, name := range names {
		u, err := r.Register(context.Background(), name, noop)
		require.NoError(t, err)
		unregisters[name] = u
	}
	want := slices.Clone(names)
	slices.Sort(want)
	assert.Equal(t, want, r.Registered())
	assert.Equal(t, []string{"Beta", "alpha", fsPkg, sessionPkg, sessionExtraPkg, "zeta"}, r.Registered(), "byte-wise order")

	unregisters["alpha"]()
	assert.Equal(t, []string{"Beta", fsPkg, sessionPkg, sessionExtraPkg, "zeta"}, r.Registered())

	got := r.Registered()
	got[0] = "mutated"
	assert.Equal(t, "Beta", r.Registered()[0], "Registered returns a copy")
}

func TestFail(t *testing.T) {
	t.Run("I-10 Fail builds an *invariants.Error attributed to the package", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		var fail func(string) error
		unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			fail = in.Fail
			return nil
		})
		require.NoError(t, err)
		defer unregister()
		require.NotNil(t, fail)

		err = fail("widget count must be positive")
		require.Error(t, err)
		assert.Equal(t, `invariant violated by "example.com/fake/widgets": widget count must be positive`, err.Error())
		require.ErrorIs(t, err, invariants.ErrInvariant)
		var ie *invariants.Error
		require.ErrorAs(t, err, &ie)
		assert.EqualValues(t, "INVARIANT", ie.Code)
		assert.EqualValues(t, invariants.Code, ie.Code)
		assert.Equal(t, fakePkg, ie.Package)
		assert.Equal(t, "widget count must be positive", ie.Message)
	})

	t.Run("I-10 the package is quoted as a Go string and the message is kept verbatim", func(t *testing.T) {
		err := error(&invariants.Error{Package: "p", Message: `a "quoted" value: "host-root"`})
		assert.Equal(t, `invariant violated by "p": a "quoted" value: "host-root"`, err.Error())
	})

	t.Run("I-10 a wrapped violation still matches ErrInvariant and *Error", func(t *testing.T) {
		err := fmt.Errorf("tool call: %w", &invariants.Error{Code: invariants.Code, Package: fakePkg, Message: "m"})
		require.ErrorIs(t, err, invariants.ErrInvariant)
		var ie *invariants.Error
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, fakePkg, ie.Package)
		assert.EqualValues(t, "INVARIANT", ie.Code)
	})

	t.Run("I-10 ErrInvariant matches only invariant violations", func(t *testing.T) {
		assert.NotErrorIs(t, errors.New("invariant violated"), invariants.ErrInvariant)
		assert.NotErrorIs(t, fmt.Errorf("invariants: package %q is already registered", fakePkg), invariants.ErrInvariant)
		assert.NotErrorIs(t, &invariants.Error{Package: fakePkg, Message: "m"}, errors.New("other"))
	})

	t.Run("I-10 a violation returned by the installer rejects the registration with that violation", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			return in.Fail("existing state is broken")
		})
		assert.Nil(t, unregister)
		require.EqualError(t, err, `invariant violated by "example.com/fake/widgets": existing state is broken`)
		require.ErrorIs(t, err, invariants.ErrInvariant)
		assert.Empty(t, r.Registered(), "the name is released")
	})
}

func TestUnregister(t *testing.T) {
	t.Run("I-11 unregistering runs the cleanups in reverse order and releases the name", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		var order []string
		unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			in.OnCleanup(func() { order = append(order, "first") })
			in.OnCleanup(func() { order = append(order, "second") })
			in.OnCleanup(func() { order = append(order, "third") })
			return nil
		})
		require.NoError(t, err)
		assert.Empty(t, order, "no cleanup runs while registered")

		unregister()
		assert.Equal(t, []string{"third", "second", "first"}, order)
		assert.Empty(t, r.Registered())

		unregister()
		assert.Equal(t, []string{"third", "second", "first"}, order, "a second call runs nothing again")
		assert.Empty(t, r.Registered())
	})

	t.Run("I-11 the same name can be registered again (HMR) and installs afresh", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		runs := 0
		installer := func(context.Context, *invariants.Install) error { runs++; return nil }
		for range 3 {
			unregister, err := r.Register(context.Background(), fakePkg, installer)
			require.NoError(t, err)
			unregister()
		}
		assert.Equal(t, 3, runs)
	})

	t.Run("I-11 a stale unregister does not release a later registration of the same name", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		first, err := r.Register(context.Background(), fakePkg, noop)
		require.NoError(t, err)
		first()

		secondCleaned := false
		second, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			in.OnCleanup(func() { secondCleaned = true })
			return nil
		})
		require.NoError(t, err)

		first()
		assert.Equal(t, []string{fakePkg}, r.Registered(), "the second registration is still in place")
		assert.False(t, secondCleaned)
		_, err = r.Register(context.Background(), fakePkg, noop)
		require.EqualError(t, err, alreadyRegistered(fakePkg))

		second()
		assert.True(t, secondCleaned)
		assert.Empty(t, r.Registered())
	})

	t.Run("I-11 an unselected registration releases its name on unregister and tolerates a second call", func(t *testing.T) {
		r := mustNew(t, invariants.Config{})
		unregister, err := r.Register(context.Background(), fakePkg, noop)
		require.NoError(t, err)
		unregister()
		unregister()
		assert.Empty(t, r.Registered())
	})

	t.Run("I-11 concurrent unregister calls run the cleanups once", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		var mu sync.Mutex
		cleaned := 0
		unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			in.OnCleanup(func() { mu.Lock(); cleaned++; mu.Unlock() })
			return nil
		})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(unregister)
		}
		wg.Wait()
		assert.Equal(t, 1, cleaned)
		assert.Empty(t, r.Registered())
	})
}

func TestNameStaysReservedUntilCleanupsHaveRun(t *testing.T) {
	// I-12 (Go port): unregistering is synchronous, so the "mid-disposal"
	// window is the time the cleanups take: the name is released only after
	// they have all returned.
	r := mustNew(t, invariants.Config{Enabled: true})
	cleanupEntered := make(chan struct{})
	releaseCleanup := make(chan struct{})
	var order []string
	unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
		in.OnCleanup(func() { order = append(order, "earlier cleanup") })
		in.OnCleanup(func() {
			close(cleanupEntered)
			<-releaseCleanup
			order = append(order, "blocking cleanup")
		})
		return nil
	})
	require.NoError(t, err)

	unregistered := make(chan struct{})
	go func() {
		defer close(unregistered)
		unregister()
	}()
	recv(t, cleanupEntered, "the blocking cleanup to start")

	midCleanup := make(chan error, 1)
	go func() {
		u, err := r.Register(context.Background(), fakePkg, noop)
		if u != nil {
			u()
		}
		midCleanup <- err
	}()
	err = recv(t, midCleanup, "the mid-cleanup Register")
	require.EqualError(t, err, alreadyRegistered(fakePkg), "registering mid-cleanup must fail")
	assert.Equal(t, []string{fakePkg}, r.Registered(), "the name stays reserved while a cleanup runs")
	select {
	case <-unregistered:
		t.Fatal("unregister returned before its cleanup did")
	default:
	}

	close(releaseCleanup)
	recv(t, unregistered, "unregister to return")
	assert.Equal(t, []string{"blocking cleanup", "earlier cleanup"}, order)
	assert.Empty(t, r.Registered())

	afterCleanup := make(chan error, 1)
	go func() {
		u, err := r.Register(context.Background(), fakePkg, noop)
		if u != nil {
			u()
		}
		afterCleanup <- err
	}()
	require.NoError(t, recv(t, afterCleanup, "the after-cleanup Register"), "registering after the cleanups succeeds")
}

func TestInstallerFailureRollsBack(t *testing.T) {
	errBoom := errors.New("installer exploded")

	t.Run("I-13 an installer that records cleanups then fails: cleanups run in reverse, name released, retry works", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		var order []string
		unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			in.OnCleanup(func() { order = append(order, "listener A removed") })
			in.OnCleanup(func() { order = append(order, "listener B removed") })
			return errBoom
		})
		require.ErrorIs(t, err, errBoom, "Register returns the installer's error")
		assert.Nil(t, unregister)
		assert.Equal(t, []string{"listener B removed", "listener A removed"}, order)
		assert.Empty(t, r.Registered(), "the name is released")

		retried := false
		unregister, err = r.Register(context.Background(), fakePkg, func(context.Context, *invariants.Install) error {
			retried = true
			return nil
		})
		require.NoError(t, err, "retry works")
		assert.True(t, retried)
		assert.Equal(t, []string{fakePkg}, r.Registered())
		unregister()
		assert.Len(t, order, 2, "the rolled-back cleanups do not run a second time")
	})

	t.Run("the installer receives the context given to Register", func(t *testing.T) {
		type key struct{}
		r := mustNew(t, invariants.Config{Enabled: true})
		ctx := context.WithValue(context.Background(), key{}, "v")
		var got any
		unregister, err := r.Register(ctx, fakePkg, func(ctx context.Context, _ *invariants.Install) error {
			got = ctx.Value(key{})
			return nil
		})
		require.NoError(t, err)
		unregister()
		assert.Equal(t, "v", got)
	})

	t.Run("I-15 an installer that fails after waiting: the name is reserved meanwhile, then rolled back and released", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		installing := make(chan struct{})
		proceed := make(chan struct{})
		cleaned := make(chan string, 4)

		registered := make(chan error, 1)
		go func() {
			_, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
				in.OnCleanup(func() { cleaned <- "observer removed" })
				close(installing)
				// "await": a result computed elsewhere.
				res := make(chan error, 1)
				go func() { <-proceed; res <- errBoom }()
				return <-res
			})
			registered <- err
		}()

		recv(t, installing, "the installer to start")
		_, err := r.Register(context.Background(), fakePkg, noop)
		require.EqualError(t, err, alreadyRegistered(fakePkg), "the name is reserved while the installer runs")
		assert.Equal(t, []string{fakePkg}, r.Registered())

		close(proceed)
		require.ErrorIs(t, recv(t, registered, "the failing Register"), errBoom)
		assert.Equal(t, "observer removed", recv(t, cleaned, "the rollback"))
		assert.Empty(t, r.Registered())

		unregister, err := r.Register(context.Background(), fakePkg, noop)
		require.NoError(t, err, "retry works")
		unregister()
	})

	t.Run("I-15 an installer failing with a cancelled context rolls back", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		ctx, cancel := context.WithCancel(context.Background())
		cleaned := false
		_, err := r.Register(ctx, fakePkg, func(ctx context.Context, in *invariants.Install) error {
			in.OnCleanup(func() { cleaned = true })
			cancel()
			<-ctx.Done()
			return ctx.Err()
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.True(t, cleaned)
		assert.Empty(t, r.Registered())
	})
}

func TestClose(t *testing.T) {
	t.Run("I-16 after Close, Register fails with an inactive error", func(t *testing.T) {
		for _, cfg := range []invariants.Config{{Enabled: true}, {}} {
			r := mustNew(t, cfg)
			r.Close()
			ran := false
			unregister, err := r.Register(context.Background(), fakePkg, func(context.Context, *invariants.Install) error {
				ran = true
				return nil
			})
			require.Error(t, err)
			assert.Regexp(t, `(?i)inactive`, err.Error())
			assert.Equal(t, `invariants: cannot register "example.com/fake/widgets": the registry is inactive`, err.Error())
			assert.Nil(t, unregister)
			assert.False(t, ran)
			assert.Empty(t, r.Registered())
		}
	})

	t.Run("I-16 Close twice is harmless", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		r.Close()
		r.Close()
		_, err := r.Register(context.Background(), fakePkg, noop)
		assert.Regexp(t, `(?i)inactive`, err.Error())
	})

	t.Run("I-16 a registration made before Close can still be removed", func(t *testing.T) {
		r := mustNew(t, invariants.Config{Enabled: true})
		cleaned := false
		unregister, err := r.Register(context.Background(), fakePkg, func(_ context.Context, in *invariants.Install) error {
			in.OnCleanup(func() { cleaned = true })
			return nil
		})
		require.NoError(t, err)
		r.Close()
		unregister()
		assert.True(t, cleaned)
		assert.Empty(t, r.Registered())
	})
}

// probe is a dependency of the fake companion's installer (I-09).
type probe struct {
	mu        sync.Mutex
	installed int
	cleaned   int
}

func (p *probe) counts() (installed, cleaned int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.installed, p.cleaned
}

// fakeCompanion is a companion for fakePkg whose installer needs *probe.
var fakeCompanion = invariants.Companion(fakePkg, func(p *probe) invariants.Installer {
	return func(_ context.Context, in *invariants.Install) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.installed++
		in.OnCleanup(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.cleaned++
		})
		return nil
	}
})

func TestModuleAndCompanion(t *testing.T) {
	t.Run("I-09 start registers the companion with its fx-provided dependency; stop unregisters it and closes the registry", func(t *testing.T) {
		p := &probe{}
		var r *invariants.Registry
		app := fxtest.New(t, fx.NopLogger,
			invariants.Module,
			fx.Supply(invariants.Config{Enabled: true}),
			fx.Supply(p),
			fakeCompanion,
			fx.Populate(&r))
		require.NotNil(t, r)
		assert.Empty(t, r.Registered(), "nothing is registered before start")

		app.RequireStart()
		assert.Equal(t, []string{fakePkg}, r.Registered())
		installed, cleaned := p.counts()
		assert.Equal(t, 1, installed)
		assert.Equal(t, 0, cleaned)

		app.RequireStop()
		assert.Empty(t, r.Registered())
		installed, cleaned = p.counts()
		assert.Equal(t, 1, installed)
		assert.Equal(t, 1, cleaned)

		_, err := r.Register(context.Background(), fakePkg, noop)
		require.Error(t, err)
		assert.Regexp(t, `(?i)inactive`, err.Error(), "stopping the app closes its registry")
	})

	t.Run("I-05 without a supplied Config the module is disabled: the companion reserves its name, its installer never runs", func(t *testing.T) {
		p := &probe{}
		var r *invariants.Registry
		app := fxtest.New(t, fx.NopLogger, invariants.Module, fx.Supply(p), fakeCompanion, fx.Populate(&r))
		app.RequireStart()
		assert.Equal(t, []string{fakePkg}, r.Registered())
		assert.False(t, r.Selected(fakePkg))
		installed, _ := p.counts()
		assert.Equal(t, 0, installed)

		_, err := r.Register(context.Background(), fakePkg, noop)
		require.EqualError(t, err, alreadyRegistered(fakePkg))

		app.RequireStop()
		assert.Empty(t, r.Registered())
	})

	t.Run("I-02 a blocked companion reserves its name without installing", func(t *testing.T) {
		p := &probe{}
		var r *invariants.Registry
		app := fxtest.New(t, fx.NopLogger, invariants.Module,
			fx.Supply(invariants.Config{Enabled: true, Block: []string{"fake"}}),
			fx.Supply(p), fakeCompanion, fx.Populate(&r))
		app.RequireStart()
		defer app.RequireStop()
		assert.Equal(t, []string{fakePkg}, r.Registered())
		installed, _ := p.counts()
		assert.Equal(t, 0, installed)
	})

	t.Run("I-11 stopping the app and starting a second one in the same process installs afresh", func(t *testing.T) {
		p := &probe{}
		for i := range 2 {
			var r *invariants.Registry
			app := fxtest.New(t, fx.NopLogger, invariants.Module,
				fx.Supply(invariants.Config{Enabled: true}), fx.Supply(p), fakeCompanion, fx.Populate(&r))
			app.RequireStart()
			assert.Equal(t, []string{fakePkg}, r.Registered())
			app.RequireStop()
			assert.Empty(t, r.Registered())
			installed, cleaned := p.counts()
			assert.Equal(t, i+1, installed)
			assert.Equal(t, i+1, cleaned)
		}
	})

	t.Run("I-10 a companion whose installer fails makes Start fail with the INVARIANT error and releases its name", func(t *testing.T) {
		var r *invariants.Registry
		cleaned := false
		failing := invariants.Companion(fakePkg, func() invariants.Installer {
			return func(_ context.Context, in *invariants.Install) error {
				in.OnCleanup(func() { cleaned = true })
				return in.Fail("the widget store is already corrupt")
			}
		})
		app := fxtest.New(t, fx.NopLogger, invariants.Module,
			fx.Supply(invariants.Config{Enabled: true}), failing, fx.Populate(&r))
		err := app.Start(context.Background())
		require.Error(t, err)
		require.ErrorIs(t, err, invariants.ErrInvariant)
		var ie *invariants.Error
		require.ErrorAs(t, err, &ie)
		assert.EqualValues(t, "INVARIANT", ie.Code)
		assert.Equal(t, fakePkg, ie.Package)
		assert.Equal(t, "the widget store is already corrupt", ie.Message)
		assert.Contains(t, err.Error(), `invariant violated by "example.com/fake/widgets": the widget store is already corrupt`)
		assert.True(t, cleaned, "the failed installer's cleanups ran")
		assert.Empty(t, r.Registered(), "the name is released")
	})

	t.Run("I-10 a failing companion with the package blocked starts fine (its installer never runs)", func(t *testing.T) {
		failing := invariants.Companion(fakePkg, func() invariants.Installer {
			return func(_ context.Context, in *invariants.Install) error { return in.Fail("never") }
		})
		app := fxtest.New(t, fx.NopLogger, invariants.Module,
			fx.Supply(invariants.Config{Enabled: true, Block: []string{"^example\\.com/"}}), failing)
		app.RequireStart().RequireStop()
	})

	t.Run("I-08 two apps sharing nothing register the same name independently", func(t *testing.T) {
		p := &probe{}
		opts := []fx.Option{fx.NopLogger, invariants.Module, fx.Supply(invariants.Config{Enabled: true}), fx.Supply(p), fakeCompanion}
		app1 := fxtest.New(t, opts...)
		app2 := fxtest.New(t, opts...)
		app1.RequireStart()
		app2.RequireStart()
		app2.RequireStop()
		app1.RequireStop()
		installed, cleaned := p.counts()
		assert.Equal(t, 2, installed)
		assert.Equal(t, 2, cleaned)
	})
}

// Package invariants is the registry of runtime contract checks. A package
// that owns a checkable relation exports the installer of its checks; the
// composition lists every companion in one place (Companion registers an
// installer under its package's import path through an fx lifecycle hook).
// The registry runs the checks of the packages its Config selects, and
// reserves every registered package's name either way. A violated check is an *Error with code
// INVARIANT naming the owning package.
package invariants

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"go.uber.org/fx"
)

// Code is the code of every invariant violation.
const Code = "INVARIANT"

// Error is an invariant violation (I-10). Code is always Code ("INVARIANT");
// its text is `invariant violated by "<package>": <message>`.
type Error struct {
	Code    string
	Package string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("invariant violated by %q: %s", e.Package, e.Message)
}

// ErrInvariant matches every *Error with errors.Is.
var ErrInvariant = errors.New("invariant violated")

// Is reports whether target is ErrInvariant.
func (e *Error) Is(target error) bool { return target == ErrInvariant }

// Install is what an installer receives: its package, the function that
// builds its violations, and where to leave the cleanups that undo what it
// installed.
type Install struct {
	// Package is the import path the installer registered under.
	Package string
	// Fail returns the violation of this package with message.
	Fail func(message string) error

	cleanups []func()
}

// OnCleanup records fn to run when the registration is removed or rolled
// back (last recorded, first run).
func (in *Install) OnCleanup(fn func()) { in.cleanups = append(in.cleanups, fn) }

func (in *Install) cleanup() {
	for _, fn := range slices.Backward(in.cleanups) {
		fn()
	}
	in.cleanups = nil
}

// Installer installs a package's checks (hooks on the things the package
// owns), recording with in.OnCleanup how to remove them. An error, a
// violation among them, rejects the registration and rolls back whatever it
// recorded (I-13..I-15).
type Installer func(ctx context.Context, in *Install) error

// Registry holds the registrations. It is safe for concurrent use.
type Registry struct {
	cfg compiled

	mu       sync.Mutex
	inactive bool
	owners   map[string]*Install // package -> its installation (nil when not selected)
}

// New returns an active registry for cfg; invalid lists are an error (I-06).
func New(cfg Config) (*Registry, error) {
	c, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	return &Registry{cfg: c, owners: map[string]*Install{}}, nil
}

// Selected reports whether pkg's checks would run.
func (r *Registry) Selected(pkg string) bool { return r.cfg.selects(pkg) }

// Register reserves pkg and, when the registry selects it, runs installer.
// It returns the function that removes the registration: it runs the
// installer's cleanups, then releases the name, so registering the same
// package again succeeds only after removal completes (I-11, I-12).
// Errors: an invalid package name (I-07); a name already registered (I-08);
// an inactive registry (I-16); the installer's error, after rollback.
func (r *Registry) Register(ctx context.Context, pkg string, installer Installer) (unregister func(), err error) {
	if pkg == "" || strings.IndexFunc(pkg, unicode.IsSpace) >= 0 {
		return nil, errors.New("invariants: packageName must be non-blank and contain no whitespace")
	}
	r.mu.Lock()
	if r.inactive {
		r.mu.Unlock()
		return nil, fmt.Errorf("invariants: cannot register %q: the registry is inactive", pkg)
	}
	if _, taken := r.owners[pkg]; taken {
		r.mu.Unlock()
		return nil, fmt.Errorf("invariants: package %q is already registered", pkg)
	}
	var in *Install
	if r.cfg.selects(pkg) {
		in = &Install{Package: pkg, Fail: func(msg string) error { return &Error{Code: Code, Package: pkg, Message: msg} }}
	}
	r.owners[pkg] = in // reserved, even when not selected (I-05)
	r.mu.Unlock()

	if in != nil {
		if err := installer(ctx, in); err != nil {
			in.cleanup()
			r.release(pkg)
			return nil, err
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if in != nil {
				in.cleanup()
			}
			r.release(pkg)
		})
	}, nil
}

func (r *Registry) release(pkg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.owners, pkg)
}

// Registered returns the reserved package names, sorted.
func (r *Registry) Registered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.owners))
	for name := range r.owners {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Close makes the registry inactive: later registrations fail (I-16).
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inactive = true
}

// Params are the fx inputs of Module.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Config    Config `optional:"true"`
}

func provide(p Params) (*Registry, error) {
	r, err := New(p.Config)
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.StopHook(r.Close))
	return r, nil
}

// Module provides the *Registry. Supply an invariants.Config to enable
// checking.
var Module = fx.Module("invariants", fx.Provide(provide))

// Companion returns the fx option of a package's companion: on start it
// registers pkg with installer (the installer's dependencies are the
// function's other parameters, resolved by fx), on stop it unregisters.
// newInstaller is a function taking any fx-provided values and returning an
// Installer.
func Companion(pkg string, newInstaller any) fx.Option {
	named := `name:"` + pkg + `"`
	return fx.Options(
		fx.Provide(fx.Annotate(newInstaller, fx.ResultTags(named))),
		fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, r *Registry, installer Installer) {
			var unregister func()
			lc.Append(fx.Hook{
				OnStart: func(ctx context.Context) error {
					u, err := r.Register(ctx, pkg, installer)
					unregister = u
					return err
				},
				OnStop: func(context.Context) error {
					if unregister != nil {
						unregister()
					}
					return nil
				},
			})
		}, fx.ParamTags(``, ``, named))),
	)
}

// Package execsandbox is the confining command runner: every command runs in
// a helper process that restricts itself by the call's sandbox policy before
// it starts `/bin/sh -c COMMAND`. Writes are allowed only beneath the
// policy's writable roots (sandbox.WritableRoots with the policy service's
// Roots: the same set the file fence uses) by a Landlock domain, minus the
// protected paths that exist there (read-only bind mounts in a private
// mount namespace, where the kernel allows one); new network
// sockets and Unix sockets are refused by a seccomp filter unless
// configured; under danger-full-access the command runs unconfined. Where
// Landlock is missing, confined commands are refused, never run unconfined.
// See README.md for what it does not confine.
package execsandbox

import (
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Config is what the confinement permits beyond the writable roots.
type Config struct {
	// Network permits new non-Unix sockets (TCP, UDP, ...) in read-only
	// and workspace-write (--network allow).
	Network bool `yaml:"network" json:"network"`
	// UnixSockets permits new Unix sockets, and so connecting to any
	// pathname Unix socket the process can reach (--unix-sockets allow).
	UnixSockets bool `yaml:"unixSockets" json:"unixSockets"`
}

// Runner confines each command by its request's policy. It is safe for
// concurrent use.
type Runner struct {
	cfg    Config
	run    exec.Config
	policy *sandboxpolicy.Service
}

// New returns the confining runner. Errors: a nil policy service; an invalid
// runner config (see execlocal.Validate).
func New(cfg Config, run exec.Config, policy *sandboxpolicy.Service) (*Runner, error) {
	if policy == nil {
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: a sandboxpolicy.Service is required"}
	}
	run, err := execlocal.Validate(run)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, run: run, policy: policy}, nil
}

// Confines reports true.
func (r *Runner) Confines() bool { return true }

// Run runs req confined by req.Policy (see exec.Runner). A request without a
// policy, or with an unknown mode, is refused (fail closed); under read-only
// and workspace-write a kernel without Landlock refuses the command with
// exec.CodeUnavailable.
func (r *Runner) Run(ctx context.Context, req exec.Request) (exec.Result, error) {
	if err := execlocal.Check(req); err != nil {
		return exec.Result{}, err
	}
	if req.Policy == nil || !req.Policy.Mode.Valid() {
		// Fail closed: no policy, no command.
		return exec.Result{}, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: the command has no valid sandbox policy"}
	}
	conf := r.confinement(*req.Policy)
	if conf != nil && subproc.Probe().LandlockABI < 1 {
		return exec.Result{}, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"sandbox mode %q is unavailable here: %v; only %s runs commands without the sandbox", req.Policy.Mode, subproc.ErrNoLandlock, sandbox.DangerFullAccess)}
	}
	return execlocal.RunSpec(ctx, r.run, req, conf)
}

// confinement returns what a command under policy is confined to: nil (none)
// under danger-full-access; else writes beneath WritableRoots(policy) only
// (none at all in read-only), minus the protected paths that exist inside
// them (read-only bind mounts where the kernel allows a mount namespace),
// and the configured network and Unix sockets.
func (r *Runner) confinement(policy sandbox.ExecutionPolicy) *subproc.Confinement {
	if policy.Mode == sandbox.DangerFullAccess {
		return nil
	}
	roots := sandbox.WritableRoots(policy, r.policy.Roots())
	return &subproc.Confinement{
		WritableRoots: roots,
		ReadOnlyPaths: existingProtected(r.policy.Protected(), roots),
		Network:       r.cfg.Network,
		UnixSockets:   r.cfg.UnixSockets,
	}
}

// Params are the fx inputs of Module.
type Params struct {
	fx.In

	Config Config      `optional:"true"`
	Run    exec.Config `optional:"true"`
	Policy *sandboxpolicy.Service
}

func provide(p Params) (*Runner, error) { return New(p.Config, p.Run, p.Policy) }

// Module provides the confining runner as exec.Runner, in place of
// execlocal.Module. It needs a *sandboxpolicy.Service.
var Module = fx.Module("execsandbox", fx.Provide(fx.Annotate(provide, fx.As(new(exec.Runner)))))

var _ exec.Runner = (*Runner)(nil)

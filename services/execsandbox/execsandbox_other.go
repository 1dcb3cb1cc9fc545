//go:build !linux

package execsandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// unavailable is why no command runs here: the confinement is made of
// Linux's namespaces (bubblewrap), Landlock and seccomp.
var unavailable = fmt.Sprintf("confined commands need Linux (bubblewrap, Landlock and seccomp); this is %s, so every command is refused, never run unconfined", runtime.GOOS)

// Runner refuses every command on a system other than Linux.
type Runner struct{ cfg Config }

// New returns the refusing runner. Errors: a nil policy service.
func New(cfg Config, _ exec.Config, policy *sandboxpolicy.Service) (*Runner, error) {
	if policy == nil {
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: a sandboxpolicy.Service is required"}
	}
	return &Runner{cfg: cfg}, nil
}

// Run refuses (exec.CodeUnavailable): the command never runs.
func (r *Runner) Run(context.Context, exec.Request) (exec.Result, error) {
	return exec.Result{}, &exec.Error{Code: exec.CodeUnavailable, Message: unavailable}
}

// Confines reports true: nothing runs unconfined.
func (r *Runner) Confines() bool { return true }

// Describe describes no confinement: nothing runs.
func (r *Runner) Describe(sandbox.ExecutionPolicy) *exec.Confinement { return nil }

// Isolation says why confined commands are refused here.
func (r *Runner) Isolation() Isolation {
	kind := r.cfg.Isolation
	if kind == "" {
		kind = IsolationBwrap
	}
	return Isolation{Kind: kind, Unavailable: unavailable}
}

// Caps reports no caps.
func (r *Runner) Caps() (memoryBytes, pids int64) { return 0, 0 }

// GrantsHosts reports false: no command reaches the network.
func (r *Runner) GrantsHosts() bool { return false }

// Warm does nothing.
func (r *Runner) Warm(context.Context) {}

// Close does nothing.
func (r *Runner) Close() error { return nil }

// CommandEnv returns exec.Environ of the server's environment.
func CommandEnv(_ string, passthrough []string) []string {
	return exec.Environ(passthrough, os.Getenv)
}

func provide(p Params) (*Runner, error) { return New(p.Config, p.Run, p.Policy) }

// Module provides the refusing runner as exec.Runner.
var Module = fx.Module("execsandbox", fx.Provide(fx.Annotate(provide, fx.As(new(exec.Runner)))))

// Package execlocal is the plain command runner: every command runs with the
// server's own rights, whatever the call's sandbox policy. It still gives
// each command the minimal environment, kills its whole process tree on
// timeout or cancellation, and caps its output.
package execlocal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/internal/helperbin"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
)

// Runner runs commands unconfined. It is safe for concurrent use.
type Runner struct {
	cfg    exec.Config
	helper func() (*subproc.Program, error)
}

// New returns the plain runner for cfg. Errors: a negative OutputLimit; the
// running executable cannot be found or opened (when cfg.Helper is empty
// and the binary embeds no helper), or cfg.Helper is not an executable
// file. The helper is opened once, here, and run by descriptor from then on.
func New(cfg exec.Config) (*Runner, error) {
	cfg, err := Validate(cfg)
	if err != nil {
		return nil, err
	}
	helper, err := OpenHelper(cfg)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, helper: helper}, nil
}

// OpenHelper opens the helper program of cfg (validated) now and returns
// its sealed copy (subproc.Program.Sealed), made from that descriptor at
// the first call: a command that can write the binary (built inside a
// writable root) cannot change what the next command's helper or inner
// stage runs, and the server's start does not wait for the copy. With
// cfg.Helper empty (Validate leaves it so when the binary carries a
// stamped helper, internal/helperbin, a build of `make build`), the
// program is that embedded helper, checked and sealed from its bytes at
// the first call: each command then starts a program of about 4 MB rather
// than the whole harness binary (about 40 MB, 280 package initializations:
// 5 to 9 ms more per command); the running executable is opened now all
// the same, and taken instead when the check fails. Errors: *exec.Error
// with CodeInvalidRequest naming the file (now), CodeStartFailed (from the
// returned function).
func OpenHelper(cfg exec.Config) (func() (*subproc.Program, error), error) {
	embedded := cfg.Helper == ""
	if embedded {
		self, err := os.Executable()
		if err != nil {
			return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "exec: the command helper: " + err.Error()}
		}
		cfg.Helper = self
	}
	p, err := subproc.OpenProgram(cfg.Helper)
	if err != nil {
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "exec: the command helper: " + err.Error()}
	}
	return sync.OnceValues(func() (*subproc.Program, error) {
		var sealed *subproc.Program
		var err error
		if image := helperbin.Program(); embedded && image != nil {
			sealed, err = subproc.SealedProgram("harness's embedded command helper", image)
			helperbin.Release()
		} else {
			sealed, err = p.Sealed()
		}
		if err != nil {
			return nil, &exec.Error{Code: exec.CodeStartFailed, Message: "exec: the command helper: " + err.Error()}
		}
		return sealed, nil
	}), nil
}

// HelperKind says, for `harness policy`, which program OpenHelper runs for
// cfg (validated): the embedded helper, the running executable, or the
// path given.
func HelperKind(cfg exec.Config) string {
	switch {
	case cfg.Helper != "":
		self, _ := os.Executable()
		if cfg.Helper == self {
			return "this binary itself, from a sealed in-memory copy (it embeds no command helper: built without make build, each command starts the whole binary, a few milliseconds more)"
		}
		return cfg.Helper + " (the configuration's exec helper), from a sealed in-memory copy"
	case helperbin.Program() != nil:
		return fmt.Sprintf("the command helper this binary embeds (%.1f MB, its SHA-256 checked), from a sealed in-memory copy", float64(len(helperbin.Program()))/1e6)
	}
	return "this binary itself (its embedded command helper is not the one its build stamped, so it is not run), from a sealed in-memory copy"
}

// Validate returns cfg with defaults applied: OutputLimit, and Helper as the
// running executable when the binary carries no stamped helper
// (internal/helperbin.Present; with one, Helper stays empty and OpenHelper
// takes the embedded one). Errors name the field.
func Validate(cfg exec.Config) (exec.Config, error) {
	if cfg.OutputLimit < 0 {
		return cfg, &exec.Error{Code: exec.CodeInvalidRequest, Message: "exec: OutputLimit must be a positive integer"}
	}
	if cfg.OutputLimit == 0 {
		cfg.OutputLimit = exec.DefaultOutputLimit
	}
	for _, n := range cfg.Env {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			return cfg, &exec.Error{Code: exec.CodeInvalidRequest, Message: "exec: Env entries must be variable names, got " + strconv.Quote(n)}
		}
	}
	if cfg.Helper == "" && !helperbin.Present() {
		self, err := os.Executable()
		if err != nil {
			return cfg, err
		}
		cfg.Helper = self
	}
	return cfg, nil
}

// Confines reports false: the plain runner enforces no policy.
func (r *Runner) Confines() bool { return false }

// Run runs req unconfined (see exec.Runner).
func (r *Runner) Run(ctx context.Context, req exec.Request) (exec.Result, error) {
	if err := Check(req); err != nil {
		return exec.Result{}, err
	}
	return RunSpec(ctx, r.helper, r.cfg, req, nil, nil)
}

// Check validates the parts of req every runner needs: a non-blank command
// and an absolute workdir.
func Check(req exec.Request) error {
	switch {
	case strings.TrimSpace(req.Command) == "":
		return &exec.Error{Code: exec.CodeInvalidRequest, Message: "command must be a non-empty string"}
	case strings.ContainsRune(req.Command, 0):
		return &exec.Error{Code: exec.CodeInvalidRequest, Message: "command must not contain a NUL byte"}
	case !filepath.IsAbs(req.Workdir):
		return &exec.Error{Code: exec.CodeInvalidRequest, Message: "workdir must be an absolute path, got " + strconv.Quote(req.Workdir)}
	case req.Timeout < 0:
		return &exec.Error{Code: exec.CodeInvalidRequest, Message: "timeout must not be negative"}
	}
	if _, ok := req.Input.(*subproc.Input); req.Input != nil && !ok {
		return &exec.Error{Code: exec.CodeInvalidRequest, Message: fmt.Sprintf("the command's input must be a subproc.Input, got %T", req.Input)}
	}
	return nil
}

// RunSpec runs req through helper with the options of cfg (validated) and
// confine (nil: unconfined) and maps the outcome. It is the helper-based
// runner core, shared with execsandbox's Landlock isolation, which passes
// env to adjust the command's environment (nil: none; its TMPDIR).
func RunSpec(ctx context.Context, helper func() (*subproc.Program, error), cfg exec.Config, req exec.Request, confine *subproc.Confinement, env func([]string) []string) (exec.Result, error) {
	prog, err := helper()
	if err != nil {
		return exec.Result{}, err
	}
	vars := exec.Environ(cfg.Env, os.Getenv)
	if env != nil {
		vars = env(vars)
	}
	out, err := subproc.Run(ctx, prog, subproc.Spec{
		Command: req.Command, Dir: req.Workdir, Env: vars, Confine: confine,
	}, req.Timeout, cfg.OutputLimit, Watch(req))
	return Result(out, err)
}

// Watch is what req asks to follow of its command while it runs: its output
// as it comes and the signals to pass on.
func Watch(req exec.Request) subproc.Watch {
	in, _ := req.Input.(*subproc.Input)
	return subproc.Watch{Stdout: req.Stdout, Stderr: req.Stderr, Signals: req.Signals, Input: in}
}

// Result maps a subproc outcome to the runner's result: an error starting
// the run, or a command that did not start, is an *exec.Error with
// CodeStartFailed.
func Result(out subproc.Outcome, err error) (exec.Result, error) {
	if err != nil {
		return exec.Result{}, &exec.Error{Code: exec.CodeStartFailed, Message: err.Error()}
	}
	if !out.Status.Started && !out.Status.Stopped {
		return exec.Result{}, &exec.Error{Code: exec.CodeStartFailed, Message: "the command did not start: " + out.Status.Error}
	}
	return exec.Result{
		ExitCode: out.Status.ExitCode, Signal: out.Status.Signal,
		TimedOut: out.TimedOut, Cancelled: out.Cancelled, Duration: out.Duration,
		Stdout: output(out.Stdout), Stderr: output(out.Stderr),
	}, nil
}

func output(c *subproc.Capture) exec.Output {
	return exec.Output{Text: c.String(), Bytes: c.Total(), Truncated: c.Truncated()}
}

// Params are the fx inputs of Module; Config is optional.
type Params struct {
	fx.In

	Config exec.Config `optional:"true"`
}

func provide(p Params) (*Runner, error) { return New(p.Config) }

// Module provides the plain runner as exec.Runner.
var Module = fx.Module("execlocal", fx.Provide(fx.Annotate(provide, fx.As(new(exec.Runner)))))

var _ exec.Runner = (*Runner)(nil)

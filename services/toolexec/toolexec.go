// Package toolexec is the model-facing command tool, exec: a shell command
// run by the mounted exec.Runner in a working directory beneath the
// workspace, with a timeout, capped output, a cap on concurrent commands,
// and, when the runner confines, the sandbox's file or network denial
// marker (inferred from a failed command's stderr, judged against the
// policy and the command's user: denial.go, network.go, access.go) and the
// same one-call escalation as the file tools.
// It is contributed to the fx "tools" group.
package toolexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/fairshare"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/cmdjournal"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolchaincache"
)

// Limits and defaults of Config and of the timeout_ms argument.
const (
	DefaultTimeout       = 120 * time.Second
	MaxTimeout           = 600 * time.Second
	DefaultMaxConcurrent = 4
	// DefaultInteractiveIdle is Config.InteractiveIdle's default.
	DefaultInteractiveIdle = 30 * time.Minute
)

// Config tunes the tool. The zero value is valid.
type Config struct {
	// MaxConcurrent is how many commands run at once; a call beyond it
	// waits for a slot (its context still applies). 0 means
	// DefaultMaxConcurrent.
	MaxConcurrent int `yaml:"maxConcurrent" json:"maxConcurrent"`
	// PrincipalMaxConcurrent caps the commands one principal
	// (tool.Call.Principal) runs at once, of the MaxConcurrent; beyond it
	// its commands wait, and waiting commands get a free slot round-robin
	// between principals, then between sessions. 0 means no cap of its own
	// (MaxConcurrent). serve --listen sets --principal-max-commands.
	PrincipalMaxConcurrent int `yaml:"principalMaxConcurrent" json:"principalMaxConcurrent"`
	// PrincipalMaxBackground caps one principal's background commands
	// running at once over all its sessions (each session has its own cap,
	// MaxBackground); one more is refused with CodePrincipalLimit. 0 means
	// none.
	PrincipalMaxBackground int `yaml:"principalMaxBackground" json:"principalMaxBackground"`
	// PrincipalMemory caps, in bytes, the memory one principal's running
	// commands (foreground and background) may take in all: the sum of
	// their caps (the runner's exec.Capped, --exec-memory); a command that
	// would pass it is refused with CodePrincipalLimit. 0 means none; so
	// is a runner without a memory cap.
	PrincipalMemory int64 `yaml:"principalMemory" json:"principalMemory"`
	// PrincipalPids is PrincipalMemory for processes (--exec-pids).
	PrincipalPids int64 `yaml:"principalPids" json:"principalPids"`
	// InteractiveIdle ends an interactive command (exec with interactive
	// or tty) that has had no input for this long (its start counts as
	// input); 0 means DefaultInteractiveIdle. --exec-idle-timeout sets it
	// (issue 38).
	InteractiveIdle time.Duration `yaml:"interactiveIdle" json:"interactiveIdle"`
	// ToolchainCaches returns the toolchains' caches the commands'
	// environment names (toolchaincache.Candidates), called at the first
	// refused write: a write refused inside one says so in the denial's
	// sentence, with the switch that makes them writable (issue 36: npm's
	// EROFS offered only a wider mode). Nil: no such note.
	ToolchainCaches func() []toolchaincache.Cache `yaml:"-" json:"-"`
	// ToolchainCachesWritable is whether --toolchain-caches is on (then
	// only a cache that did not exist at the server's start is refused).
	ToolchainCachesWritable bool `yaml:"-" json:"-"`
}

// Deps are what the tool needs: the runner and the policy service (for the
// workspace root and, when the runner confines, each call's policy); an
// Approver enables escalation; Commands (--journal-commands) journals what
// each command changes in its workspace roots; a Sink receives every call's
// audit record (the guard's, with the command's line, workdir, exit, output
// sizes, denials and hosts).
type Deps struct {
	Runner   exec.Runner
	Policy   *sandboxpolicy.Service
	Approver sandbox.Approver
	Commands *cmdjournal.Journaler
	Logger   *zap.Logger
	Sink     audit.Sink
	// Metrics, when set, gets each command's wait for a command slot and
	// the running background commands by principal (issue 39).
	Metrics *metrics.Metrics
}

// Tool is the command tools over one runner: exec, and exec_output and
// exec_kill for its background commands.
type Tool struct {
	deps    Deps
	cfg     Config
	g       *guard.Guard
	slots   *fairshare.Queue // the command slots, shared between principals
	budgets *budgets         // what each principal's running commands reserve
	jobs    *jobs
	log     *zap.Logger
}

// New returns the tool. Errors: a nil Runner or Policy; a negative
// MaxConcurrent or principal cap.
func New(cfg Config, deps Deps) (*Tool, error) {
	if deps.Runner == nil || deps.Policy == nil {
		return nil, errors.New("toolexec: an exec.Runner and a sandboxpolicy.Service are required")
	}
	if cfg.MaxConcurrent < 0 {
		return nil, fmt.Errorf("toolexec: MaxConcurrent must be a positive integer, got %d", cfg.MaxConcurrent)
	}
	if cfg.PrincipalMaxConcurrent < 0 || cfg.PrincipalMaxBackground < 0 || cfg.PrincipalMemory < 0 || cfg.PrincipalPids < 0 {
		return nil, errors.New("toolexec: a principal's caps must not be negative")
	}
	if cfg.InteractiveIdle < 0 {
		return nil, errors.New("toolexec: InteractiveIdle must not be negative")
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	idle := cfg.InteractiveIdle
	if idle == 0 {
		idle = DefaultInteractiveIdle
	}
	log := deps.Logger
	if log == nil {
		log = zap.NewNop()
	}
	hosts, _ := deps.Runner.(exec.HostGranter)
	g, err := guard.New(guard.Config{
		Family: sandbox.Commands, Policy: deps.Policy, Confines: deps.Runner.Confines(), Approver: deps.Approver,
		Unconfined: "the command runner does not confine",
		Hosts:      hosts != nil && hosts.GrantsHosts(),
		Sink:       deps.Sink, Logger: deps.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Tool{
		deps: deps, cfg: cfg, g: g, slots: fairshare.New(fairshare.Config{Slots: cfg.MaxConcurrent}),
		budgets: newBudgets(cfg, deps.Runner), jobs: newJobs(deps.Runner, idle), log: log.Named("toolexec"),
	}, nil
}

// All returns exec, exec_kill, exec_output and exec_input.
func (t *Tool) All() []*tool.Tool { return []*tool.Tool{t.Exec(), t.Kill(), t.Output(), t.Input()} }

// Close kills every background command still running (their whole trees)
// and refuses new ones; it returns when all have ended, or with ctx's error
// when ctx ends first. Call it when the server stops.
func (t *Tool) Close(ctx context.Context) error { return t.jobs.close(ctx) }

// Params are the fx inputs of Module.
type Params struct {
	fx.In

	Config    Config `optional:"true"`
	Runner    exec.Runner
	Policy    *sandboxpolicy.Service
	Approver  sandbox.Approver      `optional:"true"`
	Commands  *cmdjournal.Journaler `optional:"true"`
	Logger    *zap.Logger           `optional:"true"`
	Sink      audit.Sink            `optional:"true"`
	Metrics   *metrics.Metrics      `optional:"true"`
	Lifecycle fx.Lifecycle
}

// Result contributes the tools to the "tools" group.
type Result struct {
	fx.Out

	Tools []*tool.Tool `group:"tools,flatten"`
}

func provide(p Params) (Result, error) {
	t, err := New(p.Config, Deps{Runner: p.Runner, Policy: p.Policy, Approver: p.Approver, Commands: p.Commands, Logger: p.Logger, Sink: p.Sink, Metrics: p.Metrics})
	if err != nil {
		return Result{}, err
	}
	if p.Metrics != nil {
		p.Metrics.Background(t.jobs.running)
	}
	// The server's stop ends every background command.
	p.Lifecycle.Append(fx.StopHook(t.Close))
	return Result{Tools: t.All()}, nil
}

// Module contributes exec, exec_output, exec_kill and exec_input to the "tools" group,
// and ends every background command when the app stops. It needs an
// exec.Runner (execlocal.Module or execsandbox.Module) and a
// *sandboxpolicy.Service; an optional sandbox.Approver enables escalation,
// an optional *cmdjournal.Journaler journals what commands change, and an
// optional audit.Sink receives every call's record.
var Module = fx.Module("toolexec",
	fx.Provide(provide),
	fx.Invoke(func(tool.Group) {}),
)

// Package toolfs is the model-facing filesystem tools: read, write, edit,
// list, glob, grep, mkdir, delete and move over the mounted fs.Service, with
// the exact texts the spec pins (T-cases), per-call sandbox policy and
// escalation when the backend confines, and the read-before-write policy
// consulted through
// fs.IntentPolicy. Each tool is contributed to the fx "tools" group.
package toolfs

import (
	"errors"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
)

// Deps are what the tools need. FS is required; Policy is required when FS
// confines; Approver, Intents, Observers and Sink are optional. Sink
// receives every call's audit record (the guard's), with the canonical
// paths the call resolved and the bytes it read or wrote.
type Deps struct {
	FS        fs.Service
	Policy    *sandboxpolicy.Service
	Approver  sandbox.Approver
	Intents   fs.IntentPolicy
	Observers []fs.Observer
	Logger    *zap.Logger
	Sink      audit.Sink
}

// Tools builds the tools over one set of dependencies.
type Tools struct {
	cfg      Config
	deps     Deps
	confines bool
	g        *guard.Guard // strict arguments, escalation, rendering
	log      *zap.Logger
	serial   serial // a session's calls on one target, one after another
}

// New validates cfg and deps and returns the tool set. Errors: an invalid
// cfg; a confining FS without a Policy (T-11); a nil FS.
func New(cfg Config, deps Deps) (*Tools, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	if deps.FS == nil {
		return nil, errors.New("toolfs: an fs.Service is required")
	}
	_, confines := deps.FS.SandboxMode()
	if confines && deps.Policy == nil {
		return nil, errors.New("toolfs: the mounted filesystem confines but no sandboxpolicy.Service is composed")
	}
	log := deps.Logger
	if log == nil {
		log = zap.NewNop()
	}
	g, err := guard.New(guard.Config{
		Family: sandbox.FileTools, Policy: deps.Policy, Confines: confines, Approver: deps.Approver,
		Unconfined: "no sandboxing filesystem to escalate",
		Sink:       deps.Sink, Logger: deps.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Tools{cfg: cfg, deps: deps, confines: confines, g: g, log: log.Named("toolfs")}, nil
}

// All returns every tool, ordered by name.
func (t *Tools) All() []*tool.Tool {
	return tool.Sorted([]*tool.Tool{t.Read(), t.Write(), t.Edit(), t.List(), t.Glob(), t.Grep(), t.Mkdir(), t.Delete(), t.Move()})
}

// Params are the fx inputs of Module.
type Params struct {
	fx.In

	Config    Config `optional:"true"`
	FS        fs.Service
	Policy    *sandboxpolicy.Service `optional:"true"`
	Approver  sandbox.Approver       `optional:"true"`
	Intents   fs.IntentPolicy        `optional:"true"`
	Observers []fs.Observer          `group:"fs.observers"`
	Logger    *zap.Logger            `optional:"true"`
	Sink      audit.Sink             `optional:"true"`
}

// Result is what the constructor contributes: each tool to the "tools"
// group.
type Result struct {
	fx.Out

	Tools []*tool.Tool `group:"tools,flatten"`
}

func provide(p Params) (Result, error) {
	t, err := New(p.Config, Deps{
		FS: p.FS, Policy: p.Policy, Approver: p.Approver,
		Intents: p.Intents, Observers: p.Observers, Logger: p.Logger, Sink: p.Sink,
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Tools: t.All()}, nil
}

// Module contributes read, write, edit, list, glob, grep, mkdir, delete and
// move to the "tools" group. It needs an fs.Service; under a confining one, a
// *sandboxpolicy.Service. An
// optional sandbox.Approver enables escalation; an optional
// fs.IntentPolicy (readbeforewrite.Module) decides write intents and edit
// guards; an optional audit.Sink receives every call's record.
var Module = fx.Module("toolfs",
	fx.Provide(provide),
	// Build the tools even when no server collects them yet, so a bad
	// Config fails the app at construction (T-10).
	fx.Invoke(func(tool.Group) {}),
)

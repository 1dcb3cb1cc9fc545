// Package compose builds the harness fx application from a config.Config:
// the one place that decides which modules a process mounts. The binary's
// commands and the integration tests all go through it.
package compose

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/internal/gpgagent"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/principal"
	"github.com/dsh-go/harness/services/readbeforewrite"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolchaincache"
	"github.com/dsh-go/harness/services/toolexec"
	"github.com/dsh-go/harness/services/toolfs"
)

// Options returns the fx options of the whole graph for cfg (validated
// first): the logger (on logOut, stderr in the binary), the policy service
// (whose writable roots add the toolchain caches, ToolchainCaches), the
// backend chosen by cfg.FS, the read-before-write policy, the file tools,
// (unless cfg.Exec is "off") the command runner chosen by cfg.Exec with
// the exec tool (with cfg.JournalCommands, journaling what each command
// changes), the audit log (unless it is off) as the audit.Sink, and the
// principals of --principals as a *principal.Set (their workspaces reach
// the policy as its PrincipalRoots), and the *Unavailable that says which
// best-effort defaults (the journal, the default audit log) it runs
// without.
// extra options are appended (a server, an approver, fx.Populate).
func Options(cfg config.Config, logOut io.Writer, extra ...fx.Option) (fx.Option, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workspace != "" {
		if info, err := os.Stat(cfg.Workspace); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("--workspace %q: not an existing directory", cfg.Workspace)
		}
		if cfg.Mode == string(sandbox.WorkspaceWrite) && sandboxpolicy.CanonicalPath(cfg.Workspace) == "/" {
			return nil, fmt.Errorf("--workspace %q is the whole filesystem (/): under workspace-write it would allow writes anywhere; give a project directory, or use --mode %s to write anywhere", cfg.Workspace, sandbox.DangerFullAccess)
		}
	}
	for _, r := range cfg.TempRoots {
		if info, err := os.Stat(r); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("--temp-root %q: not an existing directory", r)
		}
	}
	principals, err := loadPrincipals(cfg)
	if err != nil {
		return nil, err
	}
	log, err := NewLogger(cfg, logOut)
	if err != nil {
		return nil, err
	}
	owner, err := workspaceOwner(cfg)
	if err != nil {
		return nil, err
	}
	backend := fssandbox.Module
	if cfg.FS == "local" {
		backend = fslocal.Module
	}
	var temps []string
	if len(cfg.TempRoots) > 0 {
		temps = cfg.TempRoots
	}
	writable := slices.Clone(cfg.WritableRoots)
	for _, c := range ToolchainCaches(cfg) {
		writable = append(writable, c.Path)
	}
	opts := []fx.Option{
		fx.Supply(log, &Unavailable{}),
		fx.WithLogger(func(l *zap.Logger) fxevent.Logger {
			// The dependency wiring's account (each provide, invoke and
			// hook) is noise at debug: it logs only at trace. A
			// construction error is returned to the caller, which reports
			// it once; fx's own account of it (with stacks) is for tracing.
			zl := &fxevent.ZapLogger{Logger: l.Named("fx")}
			zl.UseLogLevel(TraceLevel)
			zl.UseErrorLevel(TraceLevel)
			return zl
		}),
		fx.Supply(sandboxpolicy.Config{
			Mode: sandbox.Mode(cfg.Mode), WorkspaceRoot: cfg.Workspace, TempRoots: temps, WritableRoots: writable,
			Protect: cfg.Protect, Unprotect: cfg.Unprotect, VCS: sandbox.VCS(cfg.VCS), ConfigFile: cfg.ConfigFile, Executables: executables(),
			DenyRead: cfg.DenyRead, AllowRead: cfg.AllowRead, PrivateFiles: privateFiles(cfg),
			PrincipalRoots: principalRoots(principals),
		}),
		journalOptions(cfg, fslocal.Config{Cwd: cfg.Workspace, Durability: fslocal.Durability(cfg.Durability), NewOwner: owner}),
		fx.Supply(fssandbox.Config{Landlock: cfg.Landlock}),
		fx.Supply(toolfs.Config{
			ReadLimit: cfg.ReadLimit, ReadMaxLineLength: cfg.ReadMaxLineLength, ReadMaxBytes: cfg.ReadMaxBytes,
			ReadStreamMinSize: cfg.ReadStreamMinSize, ListLimit: cfg.ListLimit, WriteMaxBytes: cfg.WriteMaxBytes,
			ResultTextMaxBytes: cfg.ResultTextMaxBytes,
		}),
		fx.Supply(invariants.Config{Enabled: cfg.Invariants}),
		invariants.Module,
		session.Module,
		sandboxpolicy.Module,
		backend,
		toolfs.Module,
		companions(),
		auditLog(cfg, logOut),
	}
	if principals != nil {
		opts = append(opts, fx.Supply(principals))
	}
	if !cfg.OneShot {
		opts = append(opts, readbeforewrite.Module)
	}
	if cfg.Exec != "off" {
		runner := execsandbox.Module
		if cfg.Exec == "local" {
			runner = execlocal.Module
		}
		sandboxCfg, err := execsandboxConfig(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts,
			fx.Supply(exec.Config{Env: passthrough(cfg, os.Getenv)}),
			fx.Supply(sandboxCfg),
			// The proxy's decisions counted in the metrics, when kept.
			fx.Decorate(func(in proxyMetricsIn) execsandbox.Config {
				if in.Metrics != nil {
					in.Config.ProxyDecided = in.Metrics.ProxyDecided
				}
				return in.Config
			}),
			runner,
			journalCommands(cfg),
			fx.Supply(toolexecConfig(cfg)),
			toolexec.Module,
		)
	}
	return fx.Options(append(opts, extra...)...), nil
}

// toolexecConfig is the command tools' configuration of cfg: over HTTP
// (--listen), each principal's share of the command slots and its caps in
// all (config.Config.PrincipalCaps); over stdio, one client, none; the
// interactive commands' idle limit (--exec-idle-timeout); and, for the
// note of a write refused in one, the toolchains' caches the commands'
// environment names and whether --toolchain-caches is on.
func toolexecConfig(cfg config.Config) toolexec.Config {
	c := toolexec.Config{
		InteractiveIdle:         cfg.ExecIdleTimeout,
		ToolchainCaches:         sync.OnceValue(func() []toolchaincache.Cache { return toolchaincache.Candidates(commandEnv(cfg)) }),
		ToolchainCachesWritable: cfg.ToolchainCaches,
	}
	if cfg.Listen != "" {
		_, c.PrincipalMaxConcurrent, c.PrincipalMaxBackground, c.PrincipalMemory, c.PrincipalPids = cfg.PrincipalCaps()
	}
	return c
}

// TraceLevel is the log level below debug (--log-level trace): the
// dependency wiring's events. zap has no trace level of its own.
const TraceLevel = zapcore.DebugLevel - 1

// NewLogger returns the zap logger of cfg writing to out (stdout belongs to
// the protocol; the binary passes stderr).
func NewLogger(cfg config.Config, out io.Writer) (*zap.Logger, error) {
	level := TraceLevel
	if cfg.LogLevel != "trace" {
		var err error
		if level, err = zapcore.ParseLevel(cfg.LogLevel); err != nil {
			return nil, fmt.Errorf("--log-level: %w", err)
		}
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeLevel = func(l zapcore.Level, e zapcore.PrimitiveArrayEncoder) {
		if l == TraceLevel {
			e.AppendString("trace")
			return
		}
		zapcore.LowercaseLevelEncoder(l, e)
	}
	var encoder zapcore.Encoder
	if cfg.LogFormat == "json" {
		encoder = zapcore.NewJSONEncoder(enc)
	} else {
		encoder = zapcore.NewConsoleEncoder(enc)
	}
	if out == nil {
		out = os.Stderr
	}
	return zap.New(zapcore.NewCore(encoder, zapcore.AddSync(out), level)), nil
}

// workspaceOwner returns the owner new files and directories take and the
// file tools act as (spec difference 9, issue 35): with --workspace-owner,
// the workspace root's (--workspace, else the working directory) when the
// process runs as root and the root belongs to another user; else nil.
func workspaceOwner(cfg config.Config) (*fslocal.Owner, error) {
	if !cfg.WorkspaceOwner {
		return nil, nil
	}
	root := cfg.Workspace
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("--workspace-owner: the working directory is unknown: %w", err)
		}
		root = wd
	}
	owner, err := fslocal.RootOwner(root)
	if err != nil {
		return nil, fmt.Errorf("--workspace-owner: %w", err)
	}
	return owner, nil
}

// passthrough is the server variables commands get besides the minimal
// environment: --exec-env's; GNUPGHOME under --gpg-agent when the server
// has it; and SSH_AUTH_SOCK when a --unix-socket names the socket it names
// (the same file, through any symlink), so naming the agent is enough for
// ssh and ssh signing in commands.
func passthrough(cfg config.Config, getenv func(string) string) []string {
	env := slices.Clone(cfg.ExecEnv)
	if cfg.GPGAgent && getenv("GNUPGHOME") != "" && !slices.Contains(env, "GNUPGHOME") {
		// gpg in a command looks for the agent where the server's does.
		env = append(env, "GNUPGHOME")
	}
	sock := getenv("SSH_AUTH_SOCK")
	if sock == "" || slices.Contains(env, "SSH_AUTH_SOCK") {
		return env
	}
	agent, err := os.Stat(sock)
	if err != nil {
		return env
	}
	for _, p := range cfg.UnixSocketPaths {
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, agent) {
			return append(env, "SSH_AUTH_SOCK")
		}
	}
	return env
}

// execsandboxConfig is the confining runner's part of cfg (validated).
// With --gpg-agent under --exec sandbox it finds the agent (starting it);
// errors: the agent cannot be found (gpgagent.Find's error).
func execsandboxConfig(cfg config.Config) (execsandbox.Config, error) {
	mem, _ := config.ParseSize(cfg.ExecMemory) // validated
	c := execsandbox.Config{
		Network: cfg.Network == "allow", UnixSockets: cfg.UnixSockets == "allow", UnixSocketPaths: cfg.UnixSocketPaths,
		Isolation: cfg.ExecIsolation, Memory: mem, Pids: int64(cfg.ExecPids),
		AllowDomains: cfg.AllowDomains, OneCall: cfg.OneShot,
	}
	if cfg.GPGAgent && cfg.Exec == "sandbox" {
		agent, err := gpgagent.Find(context.Background())
		if err != nil {
			return c, fmt.Errorf("--gpg-agent: %w", err)
		}
		c.GPGAgent = &agent
	}
	return c, nil
}

// privateFiles are the HTTP front end's files no tool or command may read
// or change: the token file, the principals file, the TLS certificate and
// key (issue 26).
func privateFiles(cfg config.Config) []string {
	var out []string
	for _, f := range []string{cfg.TokenFile, cfg.Principals, cfg.TLSCert, cfg.TLSKey} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// loadPrincipals returns the principals of cfg's --principals file (nil
// without one), loaded once for the whole graph.
func loadPrincipals(cfg config.Config) (*principal.Set, error) {
	if cfg.Principals == "" {
		return nil, nil
	}
	return principal.Load(cfg.Principals)
}

// principalRoots returns every workspace of set, in order, once.
func principalRoots(set *principal.Set) []string {
	if set == nil {
		return nil
	}
	var out []string
	for _, name := range set.Names() {
		p, _ := set.Lookup(name)
		for _, w := range p.Workspaces {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// executables are harness's own executable as the running binary
// (os.Executable) and the command that started it (os.Args[0]: a client
// starts that path again; made absolute, or found on PATH as the client
// found it when it is a bare name) name it; the policy protects them
// inside the writable roots (sandboxpolicy.Config.Executables).
func executables() []string {
	var out []string
	if self, err := os.Executable(); err == nil {
		out = append(out, self)
	}
	started := os.Args[0]
	if !strings.Contains(started, "/") {
		found, err := osexec.LookPath(started)
		if err != nil {
			return out
		}
		started = found
	}
	if abs, err := filepath.Abs(started); err == nil {
		out = append(out, abs)
	}
	return out
}

// proxyMetricsIn is what the runner's configuration is decorated with.
type proxyMetricsIn struct {
	fx.In

	Config  execsandbox.Config
	Metrics *metrics.Metrics `optional:"true"`
}

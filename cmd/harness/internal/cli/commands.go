package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"go.uber.org/dig"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/internal/textpages"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/netproxy"
	"github.com/dsh-go/harness/services/principal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/telemetry"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolchaincache"
	"github.com/dsh-go/harness/services/toolfs"
)

// start builds and starts the application of cfg with extra options; the
// returned stop func stops it. A construction error is a configuration
// error (exit 2).
func start(ctx context.Context, cfg config.Config, env Env, extra ...fx.Option) (func(), error) {
	opts, err := compose.Options(cfg, env.Stderr, extra...)
	if err != nil {
		return nil, &usageError{err: err}
	}
	app := fx.New(opts)
	if err := app.Err(); err != nil {
		return nil, &usageError{err: startFailure(cfg, env, err)}
	}
	if err := app.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // interrupted while starting: not a config error
		}
		return nil, &usageError{err: startFailure(cfg, env, err)}
	}
	return func() { _ = app.Stop(context.WithoutCancel(ctx)) }, nil
}

// startFailure returns the root cause of an error building or starting the
// application: the dependency wiring's account around it (which function
// could not be built, from which file) is logged at debug (--log-level
// debug or trace), not shown to every user.
func startFailure(cfg config.Config, env Env, err error) error {
	if log, lerr := compose.NewLogger(cfg, env.Stderr); lerr == nil {
		log.Debug("the application did not start", zap.String("detail", err.Error()))
	}
	return dig.RootCause(err)
}

// startServer parses the flags of command name, which takes no positional
// argument, and starts the graph with the MCP server and the options extra
// builds from the configuration.
func startServer(ctx context.Context, name string, args []string, env Env, extra ...func(config.Config) fx.Option) (*mcpserver.Server, config.Config, func(), error) {
	fset := newFlags(name, env, true)
	cfg, err := fset.parseFlagsOnly(args)
	if err != nil {
		return nil, cfg, nil, err
	}
	opts := make([]fx.Option, 0, len(extra)+1)
	for _, e := range extra {
		opts = append(opts, e(cfg))
	}
	var m *metrics.Metrics
	if cfg.Metrics() {
		m = metrics.New()
		opts = append(opts, fx.Supply(m))
	}
	if cfg.OTLP() {
		opts = append(opts, fx.Provide(func(lc fx.Lifecycle, log *zap.Logger) (*telemetry.Exporter, error) {
			e, err := telemetry.Open(telemetry.Options{Endpoint: cfg.OTLPEndpoint, Version: version(), Metrics: m, Log: log.Named("otlp")})
			if err != nil {
				return nil, &config.FieldError{Key: "otlp-endpoint", Msg: err.Error()}
			}
			lc.Append(fx.StopHook(e.Close))
			return e, nil
		}))
	}
	var srv *mcpserver.Server
	stop, err := start(ctx, cfg, env,
		fx.Supply(mcpserver.Options{
			Version: version(), Workspace: cfg.Workspace, MaxConcurrentCalls: cfg.MaxConcurrentCalls, MaxWaitingCalls: cfg.MaxWaitingCalls,
			CallWait: cfg.CallWait, RootsTimeout: cfg.RootsTimeout, SessionTemp: cfg.SessionTempParent(), Metrics: m,
		}),
		mcpserver.Module,
		fx.Populate(&srv),
		fx.Options(opts...),
	)
	return srv, cfg, stop, err
}

// parseFlagsOnly is parseConfig for a command that takes no positional
// argument.
func (fs *flagSet) parseFlagsOnly(args []string) (config.Config, error) {
	cfg, err := fs.parseConfig(args)
	if err == nil {
		err = fs.noArgs()
	}
	return cfg, err
}

// serve runs the MCP server on stdin/stdout until the client disconnects,
// or with --listen over Streamable HTTP until it is told to stop.
func serve(ctx context.Context, args []string, env Env) error {
	// The start touched a little of each huge mapping of the executable:
	// from here on only what the server uses counts (textpages; the runner
	// shrinks once more after its warm-up).
	textpages.Shrink()
	var (
		logger     *zap.Logger
		principals *principal.Set
		m          *metrics.Metrics
	)
	srv, cfg, stop, err := startServer(ctx, "serve", args, env, warnUnconfined, func(config.Config) fx.Option {
		return fx.Invoke(func(p servedGraph) { logger, principals, m = p.Logger, p.Principals, p.Metrics })
	})
	if errors.Is(err, context.Canceled) {
		return nil // interrupted before serving: a clean shutdown
	}
	if err != nil {
		return err
	}
	defer stop()
	if parent := cfg.SessionTempParent(); parent != "" {
		// What a killed server's sessions left behind.
		if n := sandboxpolicy.RemoveOrphanTemps(parent); n > 0 {
			logger.Info("removed the temp areas of sessions no server holds", zap.String("in", parent), zap.Int("count", n))
		}
	}
	if m != nil {
		m.Sessions(srv.Sessions)
	}
	if cfg.MetricsListen != "" {
		stopMetrics, err := serveMetrics(cfg.MetricsListen, m, env, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	if cfg.Listen != "" {
		return serveHTTP(ctx, srv, cfg, env, principals, m, logger)
	}
	if env.StdinIsTerminal {
		explainServe(env.Stderr, serveHintArgs(args, cfg))
	}
	transport := &mcpserver.StdioTransport{Reader: env.Stdin, Writer: env.Stdout, MaxLineBytes: maxLineBytes(cfg)}
	if err := srv.Run(ctx, transport); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// servedGraph is what serve takes from the graph besides the server: the
// logger, and the principals of --principals when there are any.
type servedGraph struct {
	fx.In

	Logger     *zap.Logger
	Principals *principal.Set   `optional:"true"`
	Metrics    *metrics.Metrics `optional:"true"`
}

// warnUnconfined logs on start, under --fs local, that nothing is confined.
func warnUnconfined(cfg config.Config) fx.Option {
	return fx.Invoke(func(log *zap.Logger) {
		if cfg.FS == "local" {
			log.Warn("--fs local: nothing is confined; every write and edit runs as danger-full-access and may reach any path this process can write")
		}
	})
}

// explainServe tells a person who ran serve in a terminal what it is
// waiting for and how to try it: a client configuration whose args are
// args, the serve command line this server was started with, JSON-encoded.
func explainServe(w io.Writer, args []string) {
	self, err := os.Executable()
	if err != nil {
		self = "harness"
	}
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	client, _ := json.Marshal(map[string]map[string]server{"mcpServers": {"harness": {Command: self, Args: args}}})
	_, _ = fmt.Fprintf(w, `harness serve speaks MCP (JSON-RPC, one message a line) on stdin and stdout: an MCP client
starts it and talks to it; it prints nothing until a client writes.
To watch a session, run:  %[1]s demo
To use it, give your MCP client the command this server runs as:
  %[2]s
Waiting for a client on stdin; Ctrl-D or Ctrl-C ends.
`, term(self), client)
}

// serveHintArgs returns the argument list that starts a server like this
// one from any directory: "serve", then args (the flags as given, in
// order) with the value of --workspace replaced by the absolute
// cfg.Workspace and that of --config made absolute; when the workspace
// came from the environment or a config file rather than a flag, it is
// added as --workspace, since a client starts the server without them.
func serveHintArgs(args []string, cfg config.Config) []string {
	out := append(make([]string, 0, len(args)+3), "serve")
	hasWorkspace := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			out = append(out, args[i:]...)
			break
		}
		name, value, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var abs func(string) string
		switch name {
		case "workspace":
			hasWorkspace = true
			abs = func(string) string { return cfg.Workspace }
		case "config":
			abs = func(v string) string {
				if p, err := filepath.Abs(v); err == nil {
					return p
				}
				return v
			}
		default:
			out = append(out, a)
			continue
		}
		switch {
		case inline:
			out = append(out, "--"+name+"="+abs(value))
		case i+1 < len(args):
			out = append(out, a, abs(args[i+1]))
			i++
		default:
			out = append(out, a)
		}
	}
	if !hasWorkspace && cfg.Workspace != "" {
		out = append(out, "--workspace", cfg.Workspace)
	}
	return out
}

// maxLineBytes sizes the inbound line bound to the largest write the tools
// accept, escaped (up to 6 bytes a byte as \u00XX) plus the envelope, so an
// oversized content reaches the tool and gets FS_TOO_LARGE.
func maxLineBytes(cfg config.Config) int {
	limit := cfg.WriteMaxBytes
	if limit == 0 {
		limit = toolfs.DefaultWriteMaxBytes
	}
	return 8*limit + (1 << 20)
}

// call runs one tool call and prints its MCP result as JSON.
func call(ctx context.Context, args []string, env Env) (int, error) {
	fset := newFlags("call", env, true)
	rawArgs := fset.String("args", "", "the tool's arguments as a `JSON` object")
	var kv kvList
	fset.Var(&kv, "arg", "one argument as `k=v`, v converted to the type the tool's input schema declares for k:\n"+
		"        a string takes v as written, an integer, number or boolean parses it, any other key takes v as\n"+
		"        JSON when it parses, else as a string (repeatable; wins over --args)")
	approval := fset.String("approval", "", "how to answer an escalation (`deny|prompt`): prompt asks on the terminal, deny refuses; default prompt when stdin is a terminal; otherwise no one is asked and each denial says how to allow it instead")
	name, cfg, err := fset.splitTool(args)
	if err != nil {
		return ExitUsage, err
	}
	approver, err := chooseApprover(*approval, env)
	if err != nil {
		return ExitUsage, err
	}
	cfg.OneShot = true
	var (
		group   tool.Group
		tracker *session.Tracker
	)
	stop, err := start(ctx, cfg, env,
		fx.Provide(func() sandbox.Approver { return approver }),
		fx.Populate(&group, &tracker),
	)
	if err != nil {
		return ExitUsage, err
	}
	defer stop()
	var target *tool.Tool
	names := make([]string, 0, len(group.Tools))
	for _, t := range tool.Sorted(group.Tools) {
		names = append(names, t.Name)
		if t.Name == name {
			target = t
		}
	}
	if target == nil {
		msg := fmt.Sprintf("unknown tool %q", name)
		if s := config.Suggest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return ExitUsage, fset.usageErr(fmt.Errorf("%s: the tools are %s", msg, strings.Join(names, ", ")))
	}
	arguments, err := buildArgs(*rawArgs, kv, target.InputSchema)
	if err != nil {
		return ExitUsage, err
	}
	cwd := cfg.Workspace
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	cwd = sandboxpolicy.CanonicalPath(cwd)
	sess := tracker.Start(uuid.NewString(), cwd)
	if parent := cfg.SessionTempParent(); parent != "" && !dirfd.Beneath(cwd, parent) {
		// The call's own temp area, as a served session's (issue 34).
		temps := []string{}
		if dir, err := sandboxpolicy.NewSessionTemp(parent, cwd); err == nil {
			defer dir.Remove() //nolint:errcheck // best effort: the call's result is already decided
			temps = append(temps, dir.Path)
		} else {
			_, _ = fmt.Fprintf(env.Stderr, "harness: the call gets no temp area: %v\n", err)
		}
		if err := sandboxpolicy.SetTempRoots(sess, temps); err != nil {
			tracker.End(sess)
			return ExitToolError, err
		}
	}
	defer tracker.End(sess) // before the temp area goes
	// The call's audit record names this command as its client.
	res := target.Handler(session.NewContext(ctx, sess), tool.Call{ID: "1", Client: "harness call " + version(), Arguments: arguments})
	if err := writeJSON(env.Stdout, mcpserver.ToResult(res)); err != nil {
		return ExitToolError, err
	}
	if res.IsError {
		return ExitToolError, nil
	}
	return ExitOK, nil
}

// kvList is the repeatable --arg flag.
type kvList []string

func (l *kvList) String() string { return strings.Join(*l, " ") }

func (l *kvList) Set(v string) error {
	if !strings.Contains(v, "=") {
		return errors.New("want key=value")
	}
	*l = append(*l, v)
	return nil
}

// buildArgs merges --args (a JSON object) and the --arg pairs, which win;
// each pair's value is converted by argValue to the type schema declares.
func buildArgs(raw string, kv kvList, schema *jsonschema.Schema) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
			return nil, usagef("--args must be a JSON object: %v", errOrNull(err))
		}
	}
	for _, pair := range kv {
		k, v, _ := strings.Cut(pair, "=")
		val, err := argValue(k, v, schema)
		if err != nil {
			return nil, err
		}
		obj[k] = val
	}
	out, err := json.Marshal(maps.Clone(obj))
	return out, err
}

// argValue converts the value v of --arg k=v to the JSON type the input
// schema declares for k: a string is v as written; an integer, number or
// boolean is parsed (a usage error when it does not parse); a key the
// schema does not type is v as JSON when it parses, else a string.
func argValue(k, v string, schema *jsonschema.Schema) (json.RawMessage, error) {
	var typ string
	if schema != nil && schema.Properties[k] != nil {
		typ = schema.Properties[k].Type
	}
	bad := func(want string) error {
		return usagef("--arg %s=%s: %s takes %s", k, v, k, want)
	}
	switch typ {
	case "string":
		return json.Marshal(v)
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, bad("an integer")
		}
		return json.Marshal(n)
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, bad("a number")
		}
		return json.Marshal(f)
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, bad("true or false")
		}
		return json.Marshal(b)
	}
	if json.Valid([]byte(v)) {
		return json.RawMessage(v), nil
	}
	return json.Marshal(v)
}

func errOrNull(err error) error {
	if err == nil {
		return fmt.Errorf("got null")
	}
	return err
}

// chooseApprover returns the call command's approver: prompt on the
// terminal, deny, or (no choice and no terminal) sandbox.Unattended, which
// asks no one: the guard then renders each denial with what to do instead
// of an escalation hint.
func chooseApprover(choice string, env Env) (sandbox.Approver, error) {
	switch choice {
	case "prompt":
		return promptApprover(env), nil
	case "deny":
		return sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
			return sandbox.Rejected, nil
		}), nil
	case "":
		if env.StdinIsTerminal {
			return promptApprover(env), nil
		}
		return unattended, nil
	default:
		return nil, usagef("--approval: unknown value %q: allowed values are deny, prompt", choice)
	}
}

// unattended is the approver of a call without a terminal or --approval:
// retrying a denied call with sandbox_permissions or allow_hosts would only
// be refused for want of an approval channel, so each denial says how to
// allow it instead.
var unattended = sandbox.Unattended{
	Why:         "harness call asks for approval only on a terminal or with --approval prompt",
	Remedy:      "to allow this, run it again with a wider --mode",
	HostsRemedy: "to allow a host, run it again with --allow-domain HOST",
	ReadRemedy:  "to read it, run it again without the deny-read pattern that covers it (--allow-read drops a default one)",
}

// promptApprover asks on stderr (sandboxpolicy.Prompt) and reads the answer
// from stdin: y or yes allows this one call; s or session allows the mode
// for the rest of the session (the rest of this process's calls); anything
// else rejects; end of input cancels.
func promptApprover(env Env) sandbox.Approver {
	in := bufio.NewReader(env.Stdin)
	return sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		_, _ = fmt.Fprintf(env.Stderr, "%s\nAllow? [y = this call once, s = for the rest of the session, N = deny] ", sandboxpolicy.Prompt(req))
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return sandbox.Cancelled, nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return sandbox.AllowedOnce, nil
		case "s", "session":
			return sandbox.AllowedForSession, nil
		default:
			return sandbox.Rejected, nil
		}
	})
}

// tools prints the MCP declarations of the tools.
func tools(ctx context.Context, args []string, env Env) error {
	srv, _, stop, err := startServer(ctx, "tools", args, env)
	if err != nil {
		return err
	}
	defer stop()
	return writeJSON(env.Stdout, srv.Tools())
}

// PolicyReport is what `harness policy --json` prints.
type PolicyReport struct {
	Backend       string   `json:"backend"`
	Confines      bool     `json:"confines"`
	Mode          string   `json:"mode"`
	WorkspaceRoot string   `json:"workspaceRoot"`
	WritableRoots []string `json:"writableRoots"`
	// SessionTemp is the directory in which each session gets a temp
	// area of its own, writable under workspace-write in place of the
	// temp roots (left out of WritableRoots); "" under --shared-temp.
	SessionTemp string `json:"sessionTemp,omitempty"`
	// ToolchainCaches are the caches --toolchain-caches made writable
	// (among WritableRoots, canonical there); empty without the flag.
	ToolchainCaches []toolchaincache.Cache `json:"toolchainCaches,omitempty"`
	// Layers are the fence's enforcement layers active under
	// workspace-write, in order; empty when the backend does not confine.
	Layers []string `json:"layers"`
	// ProtectedPaths are read-only inside each writable root under
	// workspace-write; empty when the backend does not confine.
	ProtectedPaths []string `json:"protectedPaths"`
	// DenyRead is the deny-read set: what neither tool family reads. (The
	// network rule with its allowed names, --allow-domain, and the named
	// sockets, --unix-socket, are the command runner's: Exec.)
	DenyRead DenyReadReport `json:"denyRead"`
	// Exec describes the command runner; nil with --exec off.
	Exec *ExecReport `json:"exec,omitempty"`
	// Journal is the journal that keeps the prior state of every change a
	// file tool makes; nil with --journal-max-bytes 0.
	Journal *JournalReport `json:"journal,omitempty"`
	// JournalUnavailable is why the journal is off although
	// --journal-max-bytes is not 0: its directory in the state directory
	// cannot be made or opened (a missing or read-only home); "" else.
	JournalUnavailable string `json:"journalUnavailable,omitempty"`
	// AuditLog is the audit log file every call's record is appended to;
	// "" when there is none (--audit-log off, or no state directory).
	AuditLog string `json:"auditLog"`
	// AuditMaxBytes is the size past which the audit log rotates.
	AuditMaxBytes int64 `json:"auditMaxBytes,omitempty"`
	// AuditLogUnavailable is why the default audit log is off: its file in
	// the state directory cannot be made or opened; "" else (AuditLog is
	// then "").
	AuditLogUnavailable string `json:"auditLogUnavailable,omitempty"`
	// noStateDir says the audit log is off for want of a state directory.
	noStateDir bool
}

// JournalReport is the journal's part of the policy report: its directory
// and its cap in bytes (--journal-max-bytes).
type JournalReport struct {
	Dir      string `json:"dir"`
	MaxBytes int64  `json:"maxBytes"`
}

// ExecReport is the command runner's part of the policy report: what this
// kernel lets it enforce.
type ExecReport struct {
	// Runner is "sandbox" or "local" (never confines).
	Runner   string `json:"runner"`
	Confines bool   `json:"confines"`
	// LandlockABI is the kernel's Landlock ABI; 0 means confined commands
	// are refused.
	LandlockABI int `json:"landlockABI"`
	// Seccomp reports whether the socket filter can be installed.
	Seccomp     bool   `json:"seccomp"`
	Network     string `json:"network"`
	UnixSockets string `json:"unixSockets"`
	// UnixSocketPaths are the named Unix sockets (--unix-socket) commands
	// may connect to; how that holds here is Isolation.NamedSockets.
	UnixSocketPaths []string `json:"unixSocketPaths,omitempty"`
	// ProtectedCarvedOut reports whether the protected paths that exist
	// inside the writable roots are read-only for commands (bubblewrap's
	// read-only binds, or under the Landlock isolation a private mount
	// namespace: subproc.MountNamespace).
	ProtectedCarvedOut bool `json:"protectedCarvedOut"`
	// Isolation is how confined commands run (execsandbox.Runner's
	// report); nil for the plain runner.
	Isolation *execsandbox.Isolation `json:"isolation,omitempty"`
	// KeptCurrent says how the searches of a command's view (protected
	// paths, deny-read masks, sockets) stay current: by kernel
	// notifications, or, and why, by a cached walk at each command.
	KeptCurrent string `json:"keptCurrent,omitempty"`
	// JournalCommands reports --journal-commands: what each command
	// changes in its workspace roots is journaled.
	JournalCommands bool `json:"journalCommands"`
}

// policy prints the resolved policy and writable roots.
func policy(ctx context.Context, args []string, env Env) error {
	fset := newFlags("policy", env, true)
	asJSON := fset.Bool("json", false, "print JSON")
	cfg, err := fset.parseFlagsOnly(args)
	if err != nil {
		return err
	}
	rep, err := resolvePolicy(ctx, cfg, env)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, rep)
	}
	_, err = io.WriteString(env.Stdout, rep.String())
	return err
}

// resolvePolicy builds the graph of cfg and reports its policy.
func resolvePolicy(ctx context.Context, cfg config.Config, env Env) (PolicyReport, error) {
	var (
		pol      *sandboxpolicy.Service
		fsys     fs.Service
		optional struct {
			fx.In
			Runner  exec.Runner      `optional:"true"`
			Journal *journal.Journal `optional:"true"`
		}
		off *compose.Unavailable
	)
	// The report opens no audit log; it checks the file as serve would.
	auditPath, noStateDir, auditDefault := cfg.AuditLogPath(), cfg.AuditLog == "", cfg.AuditLogDefault
	cfg.AuditLog = config.AuditLogOff
	stop, err := start(ctx, cfg, env, fx.Populate(&pol, &fsys, &optional, &off))
	if err != nil {
		return PolicyReport{}, err
	}
	defer stop()
	if auditPath != "" {
		if err := compose.CheckAuditLog(auditPath, pol); err != nil {
			return PolicyReport{}, &usageError{err: err}
		}
	}
	p := pol.Default()
	mode, confines := fsys.SandboxMode()
	rep := PolicyReport{
		Backend: cfg.FS, Confines: confines, Mode: string(p.Mode), WorkspaceRoot: p.WorkspaceRoot, WritableRoots: []string{},
		DenyRead: denyReadReport(pol.DenyRead()),
		AuditLog: auditPath, noStateDir: noStateDir, JournalUnavailable: off.Journal(),
	}
	if auditPath != "" && auditDefault {
		// serve runs without the default file it cannot open.
		if err := probeAuditLog(auditPath); err != nil {
			rep.AuditLog, rep.AuditLogUnavailable = "", err.Error()+": calls are not audited (--audit-log FILE names another file)"
		}
	}
	if auditPath != "" {
		rep.AuditMaxBytes = cmp.Or(cfg.AuditMaxBytes, audit.DefaultMaxBytes)
	}
	if !confines {
		// The bare backend writes wherever the process can.
		rep.Mode = string(sandbox.DangerFullAccess)
	} else {
		rep.Mode = string(mode)
		rep.WritableRoots = append(rep.WritableRoots, p.WritableRoots()...)
		if rep.SessionTemp = cfg.SessionTempParent(); rep.SessionTemp != "" {
			// The temp roots are where the sessions' temp areas are made,
			// writable roots only where they are another root too.
			others := append(append([]string{p.WorkspaceRoot}, p.OtherRoots...), p.ExtraRoots...)
			rep.WritableRoots = slices.DeleteFunc(rep.WritableRoots, func(r string) bool {
				return slices.Contains(p.TempRoots, r) && !slices.Contains(others, r)
			})
		}
		rep.ToolchainCaches = compose.ToolchainCaches(cfg)
	}
	if cfg.Exec != "off" {
		caps := subproc.Probe()
		rep.Exec = &ExecReport{
			Runner: cfg.Exec, Confines: cfg.Exec == "sandbox", LandlockABI: caps.LandlockABI, Seccomp: caps.Seccomp,
			Network: cfg.Network, UnixSockets: cfg.UnixSockets, UnixSocketPaths: cfg.UnixSocketPaths,
			JournalCommands: cfg.JournalCommands,
		}
		if kept, why := protectscan.Notifications(); kept {
			rep.Exec.KeptCurrent = "kept current by inotify: a command walks only what changed since the last"
		} else {
			rep.Exec.KeptCurrent = "walked at each command, answered from a cache of unchanged directories (" + why + ")"
		}
		if r, ok := optional.Runner.(*execsandbox.Runner); ok {
			iso := r.Isolation()
			rep.Exec.Isolation = &iso
			rep.Exec.ProtectedCarvedOut = iso.Unavailable == "" && (iso.Kind == execsandbox.IsolationBwrap || subproc.MountNamespace())
		}
	}
	if j := optional.Journal; j != nil {
		rep.Journal = &JournalReport{Dir: j.Dir(), MaxBytes: j.MaxBytes()}
	}
	rep.Layers, rep.ProtectedPaths = []string{}, []string{}
	if fence, ok := fsys.(interface{ Layers() fssandbox.Layers }); ok {
		l := fence.Layers()
		rep.Layers, rep.ProtectedPaths = layerNames(l), l.Protected
	}
	return rep, nil
}

// layerNames describes the fence's enforcement layers, one line each.
func layerNames(l fssandbox.Layers) []string {
	names := []string{
		"policy check: the canonical target beneath a writable root, not a protected path (decided again on the open parent directory)",
		"confined handle: every syscall beneath the root (openat2 RESOLVE_BENEATH)",
	}
	if l.LandlockABI > 0 {
		return append(names, fmt.Sprintf("landlock: ABI %d, writes only beneath the root on the mutating thread", l.LandlockABI))
	}
	return append(names,
		"landlock: "+l.NoLandlock,
		"fallback: publication by exchange, checked beneath the root after the fact and undone when not")
}

// String is the report as `harness policy` prints it.
func (rep PolicyReport) String() string {
	confines := rep.Confines
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "backend:        %s\n", rep.Backend)
	if !confines {
		b.WriteString("confines:       no (every write the process can make is allowed)\n")
	}
	_, _ = fmt.Fprintf(&b, "mode:           %s\n", rep.Mode)
	if rep.WorkspaceRoot == "" {
		b.WriteString("workspace root: none (no workspace is set: the working directory is /)\n")
	} else {
		_, _ = fmt.Fprintf(&b, "workspace root: %s\n", rep.WorkspaceRoot)
	}
	b.WriteString("writable roots:")
	switch {
	case !confines || rep.Mode == string(sandbox.DangerFullAccess):
		b.WriteString(" everywhere\n")
	case len(rep.WritableRoots) == 0:
		b.WriteString(" none\n")
	default:
		b.WriteByte('\n')
		for _, r := range rep.WritableRoots {
			_, _ = fmt.Fprintf(&b, "  %s\n", r)
		}
		if rep.SessionTemp != "" {
			_, _ = fmt.Fprintf(&b, "  a temp area of each session's own, made in %s (its commands' TMPDIR; --shared-temp: the temp roots themselves)\n", rep.SessionTemp)
		}
	}
	if len(rep.ToolchainCaches) > 0 && rep.Mode != string(sandbox.DangerFullAccess) {
		b.WriteString("toolchain caches (--toolchain-caches; writable under workspace-write):\n")
		for _, c := range rep.ToolchainCaches {
			_, _ = fmt.Fprintf(&b, "  %-15s %s\n", c.Tool+":", c.Path)
		}
	}
	if len(rep.ProtectedPaths) > 0 {
		b.WriteString("protected paths (read-only inside each writable root):\n")
		for _, p := range rep.ProtectedPaths {
			_, _ = fmt.Fprintf(&b, "  %s\n", p)
		}
	}
	if len(rep.Layers) > 0 {
		b.WriteString("enforcement under workspace-write:\n")
		for _, l := range rep.Layers {
			_, _ = fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	switch {
	case rep.AuditLog != "":
		_, _ = fmt.Fprintf(&b, "audit log:      %s (one JSON line per call; rotated past %d bytes; harness audit reads it)\n", rep.AuditLog, rep.AuditMaxBytes)
	case rep.AuditLogUnavailable != "":
		_, _ = fmt.Fprintf(&b, "audit log:      none (%s)\n", rep.AuditLogUnavailable)
	case rep.noStateDir:
		b.WriteString("audit log:      none (no state directory: neither $XDG_STATE_HOME nor $HOME is set; give --audit-log FILE)\n")
	default:
		b.WriteString("audit log:      off\n")
	}
	writeDenyRead(&b, rep.DenyRead)
	if j := rep.Journal; j != nil {
		_, _ = fmt.Fprintf(&b, "journal:        %s (the prior state of every change a file tool makes, up to %d bytes, the oldest dropped first)\n", j.Dir, j.MaxBytes)
	} else if rep.JournalUnavailable != "" {
		_, _ = fmt.Fprintf(&b, "journal:        off (%s)\n", rep.JournalUnavailable)
	} else {
		b.WriteString("journal:        off (--journal-max-bytes 0: changes cannot be undone)\n")
	}
	// The network rule with its allowed names (--allow-domain) and the
	// named sockets (--unix-socket) follow, among the commands' lines.
	if e := rep.Exec; e != nil {
		writeExec(&b, e)
		writeCommandJournal(&b, e)
	}
	return b.String()
}

// writeCommandJournal writes whether commands' changes are journaled.
func writeCommandJournal(b *strings.Builder, e *ExecReport) {
	if e.JournalCommands {
		b.WriteString("command journal: on (--journal-commands: each command's workspace roots are snapshotted before it runs and what it changed is journaled, " +
			"except .git, the deny-read set and gitignored paths)\n")
		return
	}
	b.WriteString("command journal: off (a command's changes are not journaled; --journal-commands turns it on)\n")
}

// writeExec writes the commands: part of the policy report.
func writeExec(b *strings.Builder, e *ExecReport) {
	_, _ = fmt.Fprintf(b, "commands:       %s", e.Runner)
	iso := e.Isolation
	switch {
	case !e.Confines:
		b.WriteString(" (confines: no; every command runs with the server's rights)\n")
		return
	case iso == nil:
		b.WriteByte('\n')
		return
	case iso.Unavailable != "":
		_, _ = fmt.Fprintf(b, " (%s isolation unavailable: commands under read-only and workspace-write are refused: %s)\n", iso.Kind, iso.Unavailable)
		return
	case iso.Kind == execsandbox.IsolationBwrap:
		_, _ = fmt.Fprintf(b, " (bubblewrap %s: / read-only, writable roots bound read-write, existing protected paths read-only, "+
			"own user, PID, IPC and UTS namespaces, fresh /dev and /proc, new session, no capabilities; "+
			"Landlock ABI %d and seccomp beneath; network %s, Unix sockets %s)\n", iso.Bwrap, e.LandlockABI, e.Network, ownSockets(e.UnixSockets))
	default:
		_, _ = fmt.Fprintf(b, " (Landlock ABI %d and seccomp only: writes beneath the writable roots only; network %s, Unix sockets %s", e.LandlockABI, e.Network, e.UnixSockets)
		if e.ProtectedCarvedOut {
			b.WriteString("; existing protected paths read-only by bind mounts)\n")
		} else {
			b.WriteString("; no mount namespace: protected paths are not carved out for commands)\n")
		}
	}
	switch {
	case e.Network == "allow":
		b.WriteString("network:        allow (every host; no proxy)\n")
	case len(iso.AllowDomains) > 0:
		_, _ = fmt.Fprintf(b, "network:        deny, except through harness's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) to: %s; "+
			"and the hosts the user allows a command once or for the session (allow_hosts)\n", strings.Join(iso.AllowDomains, ", "))
		if len(iso.Direct) > 0 {
			_, _ = fmt.Fprintf(b, "direct hosts:   programs that ignore the proxy variables (Node's fetch, ssh) reach %s by name (the command's /etc/hosts), "+
				"a wildcard's names on their entry's ports and a granted host on ports %s (the namespace's name server); an IP entry only through the proxy variables\n", strings.Join(iso.Direct, ", "), directPorts())
		}
	case iso.Proxied:
		b.WriteString("network:        deny (loopback only, shared by the session's commands); harness's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) " +
			"refuses every host at once, naming it, but those the user allows a command once or for the session (allow_hosts)\n")
	default:
		b.WriteString("network:        deny (loopback only, shared by the session's commands)\n")
	}
	if e.KeptCurrent != "" {
		_, _ = fmt.Fprintf(b, "command's view: protected paths, deny-read masks and sockets of the writable roots %s\n", e.KeptCurrent)
	}
	_, _ = fmt.Fprintf(b, "commands run as: %s\n", iso.RunAs)
	if iso.Helper != "" {
		_, _ = fmt.Fprintf(b, "command helper: %s\n", iso.Helper)
	}
	_, _ = fmt.Fprintf(b, "command limits: %s\n", iso.Limits)
	if len(e.UnixSocketPaths) > 0 {
		b.WriteString("named Unix sockets (--unix-socket)")
		if iso.NamedSockets != "" {
			_, _ = fmt.Fprintf(b, ", %s", iso.NamedSockets)
		}
		b.WriteString(":\n")
		for _, p := range e.UnixSocketPaths {
			_, _ = fmt.Fprintf(b, "  %s\n", p)
		}
	}
	if iso.GPGAgent != "" {
		_, _ = fmt.Fprintf(b, "gpg-agent (--gpg-agent): %s\n", iso.GPGAgent)
	}
	b.WriteString("not confined for commands:\n")
	for _, n := range iso.NotCovered {
		_, _ = fmt.Fprintf(b, "  %s\n", n)
	}
}

// writeJSON prints v as indented JSON without HTML escaping, so tool texts
// read as they are ("<path>", not "\u003cpath\u003e"): v is encoded once
// (its own MarshalJSON may escape), decoded, and encoded again.

// ownSockets is the Unix-socket setting as the policy report says it: under
// deny, a command's own sockets still work (issue 36).
func ownSockets(setting string) string {
	if setting == "deny" {
		return "deny (a command's own beneath its writable roots work)"
	}
	return setting
}

func writeJSON(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var plain any
	if err := dec.Decode(&plain); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(plain)
}

// probeAuditLog makes the audit log file path (and its directory) as
// serve's audit.OpenLog would, writing nothing to it: an error says serve
// could not open it.
func probeAuditLog(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// directPorts is netproxy.DirectPorts as a list ("22, 80, 443").
func directPorts() string {
	out := make([]string, len(netproxy.DirectPorts))
	for i, p := range netproxy.DirectPorts {
		out[i] = strconv.Itoa(p)
	}
	return strings.Join(out, ", ")
}

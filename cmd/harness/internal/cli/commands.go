package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"go.uber.org/fx"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// start builds and starts the application of cfg with extra options; the
// returned stop func stops it. A construction error is a configuration
// error (exit 2).
func start(ctx context.Context, cfg config.Config, env Env, extra ...fx.Option) (func(), error) {
	opts, err := compose.Options(cfg, env.Stderr, extra...)
	if err != nil {
		return nil, &usageError{err}
	}
	app := fx.New(opts)
	if err := app.Err(); err != nil {
		return nil, &usageError{err}
	}
	if err := app.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // interrupted while starting: not a config error
		}
		return nil, &usageError{err}
	}
	return func() { _ = app.Stop(context.WithoutCancel(ctx)) }, nil
}

// startServer parses the flags of command name, which takes no positional
// argument, and starts the graph with the MCP server.
func startServer(ctx context.Context, name string, args []string, env Env) (*mcpserver.Server, config.Config, func(), error) {
	fset, load := flags(name, env)
	cfg, err := parseFlagsOnly(name, fset, load, args)
	if err != nil {
		return nil, cfg, nil, err
	}
	var srv *mcpserver.Server
	stop, err := start(ctx, cfg, env,
		fx.Supply(mcpserver.Options{Version: version(), Workspace: cfg.Workspace}),
		mcpserver.Module,
		fx.Populate(&srv),
	)
	return srv, cfg, stop, err
}

// parseFlagsOnly is parse for a command that takes no positional argument.
func parseFlagsOnly(name string, fset *flag.FlagSet, load func() (config.Config, error), args []string) (config.Config, error) {
	cfg, err := parse(fset, load, args)
	if err == nil && fset.NArg() > 0 {
		err = usagef("%s takes no arguments, got %q", name, fset.Args())
	}
	return cfg, err
}

// serve runs the MCP server on stdin/stdout until the client disconnects.
func serve(ctx context.Context, args []string, env Env) error {
	srv, cfg, stop, err := startServer(ctx, "serve", args, env)
	if errors.Is(err, context.Canceled) {
		return nil // interrupted before serving: a clean shutdown
	}
	if err != nil {
		return err
	}
	defer stop()
	transport := &mcpserver.StdioTransport{Reader: env.Stdin, Writer: env.Stdout, MaxLineBytes: maxLineBytes(cfg)}
	if err := srv.Run(ctx, transport); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
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
	fset, load := flags("call", env)
	rawArgs := fset.String("args", "", "the tool's arguments as a JSON object")
	var kv kvList
	fset.Var(&kv, "arg", "one argument as key=value; a value that parses as JSON is JSON, else a string (repeatable)")
	approval := fset.String("approval", "", "how to answer an escalation: prompt (ask on the terminal) or deny; default prompt when stdin is a terminal, else unavailable")
	name, cfg, err := splitTool(fset, load, args)
	if err != nil {
		return ExitUsage, err
	}
	arguments, err := buildArgs(*rawArgs, kv)
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
		fx.Provide(func() sandboxpolicy.Approver { return approver }),
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
		return ExitUsage, usagef("unknown tool %q: the tools are %s", name, strings.Join(names, ", "))
	}
	cwd := cfg.Workspace
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	cwd = sandboxpolicy.CanonicalPath(cwd)
	sess := tracker.Start(uuid.NewString(), cwd)
	defer tracker.End(sess)
	res := target.Handler(ctx, tool.Call{Session: sess, ID: "1", Arguments: arguments})
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
		return fmt.Errorf("--arg %q: want key=value", v)
	}
	*l = append(*l, v)
	return nil
}

// buildArgs merges --args (a JSON object) and the --arg pairs, which win.
func buildArgs(raw string, kv kvList) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
			return nil, usagef("--args must be a JSON object: %v", errOrNull(err))
		}
	}
	for _, pair := range kv {
		k, v, _ := strings.Cut(pair, "=")
		if json.Valid([]byte(v)) {
			obj[k] = json.RawMessage(v)
			continue
		}
		quoted, _ := json.Marshal(v)
		obj[k] = quoted
	}
	out, err := json.Marshal(maps.Clone(obj))
	return out, err
}

func errOrNull(err error) error {
	if err == nil {
		return fmt.Errorf("got null")
	}
	return err
}

// chooseApprover returns the call command's approver: prompt on the
// terminal, deny, or (no choice and no terminal) unavailable.
func chooseApprover(choice string, env Env) (sandboxpolicy.Approver, error) {
	switch choice {
	case "prompt":
		return promptApprover(env), nil
	case "deny":
		return sandboxpolicy.ApproverFunc(func(context.Context, sandboxpolicy.ApprovalRequest) (sandboxpolicy.Outcome, error) {
			return sandboxpolicy.Rejected, nil
		}), nil
	case "":
		if env.StdinIsTerminal {
			return promptApprover(env), nil
		}
		return sandboxpolicy.ApproverFunc(func(context.Context, sandboxpolicy.ApprovalRequest) (sandboxpolicy.Outcome, error) {
			return sandboxpolicy.Unavailable, nil
		}), nil
	default:
		return nil, usagef("--approval: unknown value %q: allowed values are deny, prompt", choice)
	}
}

// promptApprover asks on stderr and reads the answer from stdin: y or yes
// allows this one call; anything else rejects; end of input cancels.
func promptApprover(env Env) sandboxpolicy.Approver {
	in := bufio.NewReader(env.Stdin)
	return sandboxpolicy.ApproverFunc(func(_ context.Context, req sandboxpolicy.ApprovalRequest) (sandboxpolicy.Outcome, error) {
		on := ""
		if req.Target != "" {
			on = " on " + strconv.Quote(req.Target)
		}
		_, _ = fmt.Fprintf(env.Stderr, "Allow the %s tool%s to run once under %s? Justification: %s [y/N] ",
			req.Tool, on, req.Mode, sandboxpolicy.Printable(req.Justification))
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return sandboxpolicy.Cancelled, nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return sandboxpolicy.AllowedOnce, nil
		default:
			return sandboxpolicy.Rejected, nil
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
}

// policy prints the resolved policy and writable roots.
func policy(ctx context.Context, args []string, env Env) error {
	fset, load := flags("policy", env)
	asJSON := fset.Bool("json", false, "print JSON")
	cfg, err := parseFlagsOnly("policy", fset, load, args)
	if err != nil {
		return err
	}
	var (
		pol  *sandboxpolicy.Service
		fsys fs.Service
	)
	stop, err := start(ctx, cfg, env, fx.Populate(&pol, &fsys))
	if err != nil {
		return err
	}
	defer stop()
	p := pol.Default()
	mode, confines := fsys.SandboxMode()
	rep := PolicyReport{Backend: cfg.FS, Confines: confines, Mode: string(p.Mode), WorkspaceRoot: p.WorkspaceRoot, WritableRoots: []string{}}
	if !confines {
		// The bare backend writes wherever the process can.
		rep.Mode = string(sandboxpolicy.DangerFullAccess)
	} else {
		rep.Mode = string(mode)
		rep.WritableRoots = append(rep.WritableRoots, pol.WritableRoots(p)...)
	}
	if *asJSON {
		return writeJSON(env.Stdout, rep)
	}
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "backend:        %s\n", rep.Backend)
	if !confines {
		b.WriteString("confines:       no (every write the process can make is allowed)\n")
	}
	_, _ = fmt.Fprintf(&b, "mode:           %s\n", rep.Mode)
	_, _ = fmt.Fprintf(&b, "workspace root: %s\n", rep.WorkspaceRoot)
	b.WriteString("writable roots:")
	switch {
	case !confines || rep.Mode == string(sandboxpolicy.DangerFullAccess):
		b.WriteString(" everywhere\n")
	case len(rep.WritableRoots) == 0:
		b.WriteString(" none\n")
	default:
		b.WriteByte('\n')
		for _, r := range rep.WritableRoots {
			_, _ = fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	_, err = io.WriteString(env.Stdout, b.String())
	return err
}

// writeJSON prints v as indented JSON without HTML escaping, so tool texts
// read as they are ("<path>", not "\u003cpath\u003e"): v is encoded once
// (its own MarshalJSON may escape), decoded, and encoded again.
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

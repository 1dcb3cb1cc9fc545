// Package cli is the harness command line: serve, call, tools, policy and
// version. It parses flags into a config.Config, builds the fx application
// with compose, and runs one command. Run returns the process exit code:
// 0 success, 1 a tool error (call), 2 a usage or configuration error.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
)

// Version is the harness version, set at build time with
// -ldflags "-X github.com/dsh-go/harness/internal/cli.Version=v1.2.3".
var Version = ""

// Exit codes.
const (
	ExitOK        = 0
	ExitToolError = 1
	ExitUsage     = 2
)

// Env is the process environment a command runs in.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// StdinIsTerminal reports whether Stdin is an interactive terminal
	// (the call command's default approver prompts only then).
	StdinIsTerminal bool
}

// errUsage marks an error as a usage error (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }

const usage = `harness: a filesystem for AI agents, fenced by a sandbox policy.

Usage:
  harness serve   [flags]                        serve the tools over MCP on stdio
  harness call    TOOL [--args JSON] [--arg k=v]... [--approval deny|prompt] [flags]
                                                 run one tool call, print the MCP result as JSON
  harness tools   [flags]                        print the tools' MCP declarations as JSON
  harness policy  [--json] [flags]               print the backend, mode and writable roots
  harness version                                print the version
  harness demo                                   run a short MCP session against harness serve

Flags (also HARNESS_<NAME> variables and a --config YAML file; flags win):
`

// Run runs the command in args (without the program name) and returns the
// exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		printUsage(env.Stderr)
		return ExitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		err = serve(ctx, rest, env)
	case "call":
		var code int
		code, err = call(ctx, rest, env)
		if err == nil {
			return code
		}
	case "tools":
		err = tools(ctx, rest, env)
	case "policy":
		err = policy(ctx, rest, env)
	case "demo":
		err = demo(ctx, rest, env)
	case "version":
		_, err = fmt.Fprintln(env.Stdout, "harness", version())
	case "help", "-h", "--help":
		printUsage(env.Stdout)
		return ExitOK
	default:
		err = usagef("unknown command %q: use serve, call, tools, policy, version, demo or help", cmd)
	}
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	_, _ = fmt.Fprintln(env.Stderr, "harness:", err)
	if _, ok := errors.AsType[*usageError](err); ok {
		return ExitUsage
	}
	return ExitToolError
}

// flags returns a flag set with the configuration flags registered, and the
// loader to call after parsing.
func flags(name string, env Env) (*flag.FlagSet, func() (config.Config, error)) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	load := config.Flags(fs, env.Getenv)
	fs.Usage = func() {
		_, _ = fmt.Fprint(env.Stderr, usage)
		fs.PrintDefaults()
	}
	return fs, load
}

// parse parses args and loads the configuration; errors are usage errors.
func parse(fs *flag.FlagSet, load func() (config.Config, error), args []string) (config.Config, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config.Config{}, err
		}
		return config.Config{}, &usageError{err}
	}
	cfg, err := load()
	if err != nil {
		return cfg, &usageError{err}
	}
	return cfg, nil
}

func printUsage(w io.Writer) {
	_, _ = fmt.Fprint(w, usage)
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	fs.SetOutput(w)
	config.Flags(fs, func(string) string { return "" })
	fs.PrintDefaults()
}

// version returns Version, else the module version or VCS revision the
// binary was built from, else "dev".
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

// splitTool takes the positional tool name from args, before or after the
// flags.
func splitTool(fs *flag.FlagSet, load func() (config.Config, error), args []string) (string, config.Config, error) {
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	cfg, err := parse(fs, load, args)
	if err != nil {
		return "", cfg, err
	}
	rest := fs.Args()
	if name == "" && len(rest) > 0 {
		name, rest = rest[0], rest[1:]
		if err := fs.Parse(rest); err != nil {
			return "", cfg, &usageError{err}
		}
		if cfg, err = load(); err != nil {
			return "", cfg, &usageError{err}
		}
		rest = fs.Args()
	}
	if len(rest) > 0 {
		return "", cfg, usagef("unexpected arguments: %s", strings.Join(rest, " "))
	}
	if name == "" {
		return "", cfg, usagef("call needs a tool name: harness call TOOL --args JSON")
	}
	return name, cfg, nil
}

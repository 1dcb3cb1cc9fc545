// Package cli is the harness command line: serve, call, tools, policy,
// audit, history, undo, demo, version and help. It parses flags into a
// config.Config, builds the fx application with compose, and runs one command. Run returns the process
// exit code: 0 success (help included), 1 a tool error (call), 2 a usage or
// configuration error. Help goes to stdout; errors go to stderr, prefixed
// "harness:".
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
)

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
	// StdinIsTerminal reports whether Stdin is an interactive terminal:
	// the call command's default approver prompts only then, and serve
	// explains itself on stderr.
	StdinIsTerminal bool
	// collect, when set, takes a command's flag set in place of printing
	// its help (the reference, `harness help --markdown`, renders it).
	collect func(*flagSet)
}

// usageError marks an error as a usage error (exit 2). hint, when set, is
// printed on a line of its own after the error.
type usageError struct {
	err  error
	hint string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return &usageError{err: fmt.Errorf(format, args...)} }

// errHelp reports that a command printed its help: exit 0.
var errHelp = errors.New("help printed")

// command is one subcommand's help text.
type command struct {
	name     string
	synopsis string // after "harness NAME"
	summary  string // one line for the overview
	about    string // the paragraph of its own help
	// examples are command lines shown under Examples, each runnable as
	// written from a project directory holding a README.md.
	examples []string
}

// commands are the subcommands, in the order the overview lists them.
var commands = []command{
	{
		name: "serve", synopsis: "[flags]",
		summary: "serve the tools over MCP on stdin/stdout, or over HTTP with --listen",
		about: "Serves the read, list, glob, grep, write, edit, mkdir, move and delete tools, and exec,\n" +
			"exec_output, exec_kill and exec_input unless --exec off, over MCP (JSON-RPC, one message\n" +
			"a line) on stdin and stdout; one connection is one session. An MCP client starts it;\n" +
			"see the README for a client configuration, or run `harness demo` to watch a session.\n" +
			"With --listen it serves Streamable HTTP at /mcp instead, many sessions at once, each\n" +
			"held to its principal's workspaces (--token-file or --jwks-url, --principals).",
		examples: []string{
			"harness serve --mode workspace-write --workspace .",
			"harness serve --listen 127.0.0.1:8080 --token-file tokens --mode workspace-write --workspace .",
			"harness serve --listen :8443 --token-file tokens --principals principals.yaml --tls-cert cert.pem --tls-key key.pem",
			"harness serve --mode workspace-write --toolchain-caches --exec-env GOFLAGS",
			"harness serve --mode workspace-write --deny-read='*.pem' --deny-read='~/work/credentials' --allow-read=.env",
		},
	},
	{
		name: "call", synopsis: "TOOL [--args JSON] [--arg k=v]... [--approval deny|prompt] [flags]",
		summary: "run one tool call and print the MCP result as JSON",
		about: "Runs one tool call and prints the MCP result as JSON; exit 0 ok, 1 a tool error, 2 a\n" +
			"usage or configuration error. --args takes the arguments as a JSON object; each --arg\n" +
			"k=v sets one and wins over --args. v is converted to the type the tool's input schema\n" +
			"declares for k: a string property takes v as written (content=42 is \"42\"), an integer\n" +
			"or number property parses it (limit=5), a boolean takes true or false; any other key\n" +
			"takes v as JSON when it parses, else as a string. A one-shot call has no earlier read\n" +
			"to rely on, so it runs without the read-before-write policy; the fence still applies.\n" +
			"Its session ends when it exits: an exec started in the background or interactively\n" +
			"is ended then (drive those through harness serve and an MCP client).",
		examples: []string{
			"harness call read --arg file_path=README.md --arg limit=20",
			"harness call grep --arg pattern=TODO --arg output_mode=content",
			"harness call write --mode workspace-write --arg file_path=notes.txt --arg content=hello",
			"harness call exec --mode workspace-write --arg command='ls -l'",
		},
	},
	{
		name: "tools", synopsis: "[flags]",
		summary:  "print the tools' MCP declarations as JSON",
		about:    "Prints the tools' MCP declarations (name, description, input and output schemas) as JSON.",
		examples: []string{"harness tools", "harness tools --exec off"},
	},
	{
		name: "policy", synopsis: "[--json] [flags]",
		summary: "print the backend, mode and writable roots",
		about: "Prints the backend, the default sandbox mode, the workspace root, the writable roots, the\n" +
			"protected paths inside them, the enforcement layers the configuration resolves to, and the\n" +
			"deny-read set (what neither the file tools nor commands read, and the homes ~ stands for).",
		examples: []string{
			"harness policy --mode workspace-write --workspace .",
			"harness policy --json --mode workspace-write --toolchain-caches",
			"harness policy --deny-read='*.pem' --allow-read='~/.npmrc'",
		},
	},
	{
		name: "audit", synopsis: "[--session S] [--principal P] [--since T] [--until T] [--tool NAME]... [--decision D] [--path PREFIX] [--json] [flags]",
		summary: "print the audit log: what every call did, was refused or was allowed",
		about: "Prints the records of the audit log (--audit-log, the server's) and its rotated files, oldest\n" +
			"first: each call's time (UTC), session, tool, decision (allowed, denied, approved, declined,\n" +
			"invalid), outcome and code, path(s) or command line, and bytes; --json prints the records as\n" +
			"written, one JSON object a line (client, mode, marker, escalation and answer, content hashes\n" +
			"before and after, a command's workdir, exit, output sizes, denials and hosts). The filters\n" +
			"combine. A line a crash cut short is skipped and counted on stderr.",
		examples: []string{
			"harness audit --since 2h",
			"harness audit --session 5f0c9a1e-8d3b-4c52-9a7e-2b1f6e0d4c3a --decision denied",
			"harness audit --tool write --tool edit --path ./src --json",
		},
	},
	{
		name: "history", synopsis: "[--session S] [--since T] [--json] [--journal DIR] [flags]",
		summary: "list the changes the file tools made, from the journal",
		about: "Lists the changes the journal holds, oldest first: each change's ID, time (UTC), session,\n" +
			"tool, kind, path(s), the bytes of prior content it kept, and its status: applied, pending (a\n" +
			"crash; undo decides by the disk), failed, not kept (larger than the journal's cap: it cannot\n" +
			"be undone), dropped (evicted by the cap since), or undone by the undo's ID. An undo is a\n" +
			"change too (kind undo), which `harness undo` can take back.",
		examples: []string{
			"harness history",
			"harness history --session 5f0c9a1e-8d3b-4c52-9a7e-2b1f6e0d4c3a --since 2h",
			"harness history --json",
		},
	},
	{
		name: "undo", synopsis: "ID | --session S [--force] [--journal DIR] [flags]",
		summary: "restore what a change, or a whole session, replaced",
		about: "Restores the prior state of the change ID (see `harness history`), bytes and metadata exact,\n" +
			"or of every change of session S, newest first. Every path is checked first: where it changed\n" +
			"after the agent's change, undo refuses (JOURNAL_CHANGED_SINCE) and changes nothing, unless\n" +
			"--force; with --session, one refusal refuses all. A symlink planted on the way since is always\n" +
			"refused (JOURNAL_UNSAFE_PATH). The undo is journaled and can itself be undone. Exit 0 done,\n" +
			"1 refused or failed (the code says why), 2 a usage error.",
		examples: []string{
			"harness undo 18ed4684a2ca99a8-6c4c1309",
			"harness undo --session 5f0c9a1e-8d3b-4c52-9a7e-2b1f6e0d4c3a",
			"harness undo --session 5f0c9a1e-8d3b-4c52-9a7e-2b1f6e0d4c3a --force",
		},
	},
	{
		name: "demo", synopsis: "",
		summary: "run a short, real MCP session against harness serve",
		about: "Starts `harness serve` on a throwaway workspace and prints each call and result: a read,\n" +
			"an edit, a write outside the writable roots that is denied, an escalation that the\n" +
			"(scripted) user declines, a command in the workspace, and a command writing outside\n" +
			"that the kernel refuses.",
		examples: []string{"harness demo"},
	},
	{
		name: "version", synopsis: "",
		summary:  "print the version (also --version)",
		about:    "Prints the module version the binary was built from, or \"devel\".",
		examples: []string{"harness version"},
	},
	{
		name: "help", synopsis: "[COMMAND | --markdown]",
		summary: "print this overview, or a command's help (also COMMAND --help)",
		about: "Prints the overview, or the help of COMMAND with its flags; with --markdown, the reference\n" +
			"of every command, flag and tool in Markdown, as docs/reference.md holds it.",
		examples: []string{"harness help", "harness help call", "harness help --markdown"},
	},
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

// Run runs the command in args (without the program name) and returns the
// exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		printOverview(env.Stderr)
		return ExitUsage
	}
	code, err := dispatch(ctx, args[0], args[1:], env)
	if err == nil {
		return code
	}
	if errors.Is(err, errHelp) {
		return ExitOK
	}
	_, _ = fmt.Fprintln(env.Stderr, "harness:", err)
	if ue, ok := errors.AsType[*usageError](err); ok {
		if ue.hint != "" {
			_, _ = fmt.Fprintln(env.Stderr, ue.hint)
		}
		return ExitUsage
	}
	return ExitToolError
}

// dispatch runs command cmd with its arguments.
func dispatch(ctx context.Context, cmd string, rest []string, env Env) (int, error) {
	switch cmd {
	case "serve":
		return ExitOK, serve(ctx, rest, env)
	case "call":
		return call(ctx, rest, env)
	case "tools":
		return ExitOK, tools(ctx, rest, env)
	case "audit":
		return ExitOK, auditCmd(ctx, rest, env)
	case "policy":
		return ExitOK, policy(ctx, rest, env)
	case "demo":
		return ExitOK, demo(ctx, rest, env)
	case "history":
		return ExitOK, history(ctx, rest, env)
	case "undo":
		return undoChanges(ctx, rest, env)
	case "version", "--version", "-version":
		return ExitOK, versionCmd(rest, env)
	case "help", "-h", "-help", "--help":
		return ExitOK, help(ctx, rest, env)
	}
	msg := fmt.Sprintf("unknown command %q", cmd)
	if s := config.Suggest(cmd, commandNames()); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	msg += ": the commands are " + strings.Join(commandNames(), ", ")
	return ExitUsage, &usageError{err: errors.New(msg), hint: "Run 'harness help' for the commands."}
}

// help prints the overview, or the help of the command named in args (the
// command's own --help, so its flags are the ones it parses).
func help(ctx context.Context, args []string, env Env) error {
	fs := newFlags("help", env, false)
	markdown := fs.Bool("markdown", false, "print the reference of every command, flag and tool in Markdown (docs/reference.md)")
	if err := fs.parse(args); err != nil {
		return err
	}
	args = fs.Args()
	if *markdown {
		if len(args) > 0 {
			return fs.usageErr(errors.New("help: --markdown takes no command: it prints them all"))
		}
		return printReference(ctx, env)
	}
	if len(args) == 0 {
		printOverview(env.Stdout)
		return nil
	}
	if len(args) > 1 {
		return &usageError{err: errors.New("help takes at most one command"), hint: "Run 'harness help' for the commands."}
	}
	if _, ok := lookup(args[0]); !ok {
		msg := fmt.Sprintf("help: unknown command %q", args[0])
		if s := config.Suggest(args[0], commandNames()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return &usageError{err: errors.New(msg), hint: "Run 'harness help' for the commands."}
	}
	_, err := dispatch(ctx, args[0], []string{"--help"}, env)
	return err
}

// printOverview prints the commands and where their flags are described.
func printOverview(w io.Writer) {
	var b strings.Builder
	b.WriteString("harness: a filesystem for AI agents, fenced by a sandbox policy.\n\nUsage:\n")
	for _, c := range commands {
		_, _ = fmt.Fprintf(&b, "  harness %-8s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'harness help COMMAND' or 'harness COMMAND --help' for a command's flags.\n" +
		"Every configuration flag also reads a HARNESS_<NAME> variable and a --config YAML file;\n" +
		"flags win over variables, which win over the file.\n")
	_, _ = io.WriteString(w, b.String())
}

// flagSet is a command's flag set: the configuration flags (when the
// command takes them) and the command's own.
type flagSet struct {
	*flag.FlagSet
	name   string
	env    Env
	config map[string]bool // the names of the configuration flags
	load   func() (config.Config, error)
}

// newFlags returns command name's flag set, with the configuration flags
// registered when withConfig. Go's flag package prints nothing: parse
// reports its errors and help.
func newFlags(name string, env Env, withConfig bool) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), name: name, env: env, config: map[string]bool{}}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if withConfig {
		var groups []config.Group
		if name == "serve" {
			groups = append(groups, config.HTTPFlags)
		}
		fs.load = config.Flags(fs.FlagSet, env.Getenv, groups...)
		fs.VisitAll(func(f *flag.Flag) { fs.config[f.Name] = true })
	}
	return fs
}

// parse parses args: --help (or -h) prints the command's help on stdout and
// returns errHelp; a bad flag is a usage error with a did-you-mean and a
// pointer to the command's help.
func (fs *flagSet) parse(args []string) error {
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		if fs.env.collect != nil {
			fs.env.collect(fs)
		} else {
			fs.printHelp(fs.env.Stdout)
		}
		return errHelp
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = fmt.Sprintf("%s: unknown flag --%s", fs.name, name)
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := config.Suggest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = fmt.Sprintf("%s: --%s needs a value", fs.name, name)
	} else if m := badValue.FindStringSubmatch(msg); m != nil && fs.Lookup(m[2]) != nil {
		msg = fmt.Sprintf("%s: --%s %s: %s", fs.name, m[2], m[1], valueWanted(fs.Lookup(m[2]), m[3]))
	} else {
		msg = fs.name + ": " + strings.Replace(msg, "for flag -", "for flag --", 1)
	}
	return fs.usageErr(errors.New(msg))
}

// badValue matches the flag package's error for a value that does not
// parse: the value (quoted), the flag and the reason.
var badValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:]+): (.*)$`)

// valueWanted says what flag f takes, in words, when the flag package's
// reason is only "parse error" (a duration, a number, a boolean); else it
// returns reason.
func valueWanted(f *flag.Flag, reason string) string {
	g, ok := f.Value.(flag.Getter)
	if !ok || reason != "parse error" {
		return reason
	}
	switch g.Get().(type) {
	case time.Duration:
		return "want a duration with its unit, such as 30s, 2m or 500ms"
	case int, int64, uint, uint64:
		return "want a whole number"
	case bool:
		return "want true or false"
	}
	return reason
}

// usageErr is err as a usage error pointing at the command's help.
func (fs *flagSet) usageErr(err error) error {
	return &usageError{err: err, hint: fmt.Sprintf("Run 'harness %s --help' for its flags.", fs.name)}
}

// parseConfig parses args and loads the configuration; errors are usage
// errors.
func (fs *flagSet) parseConfig(args []string) (config.Config, error) {
	if err := fs.parse(args); err != nil {
		return config.Config{}, err
	}
	cfg, err := fs.load()
	if err != nil {
		return cfg, &usageError{err: err}
	}
	return cfg, nil
}

// printHelp prints the command's usage, its paragraph, its own flags and
// then the configuration flags.
func (fs *flagSet) printHelp(w io.Writer) {
	c, _ := lookup(fs.name)
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "Usage: harness %s %s\n\n%s\n", c.name, c.synopsis, c.about)
	if len(c.examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range c.examples {
			b.WriteString("  " + e + "\n")
		}
	}
	own := func(f *flag.Flag) bool { return !fs.config[f.Name] }
	if fs.has(own) {
		b.WriteString("\nFlags:\n")
		fs.printFlags(&b, own)
	}
	if len(fs.config) > 0 {
		b.WriteString("\nConfiguration flags (each also reads HARNESS_<NAME>, e.g. HARNESS_MODE, and a --config\n" +
			"YAML file with the flag names as keys; flags win over variables, which win over the file):\n")
		fs.printFlags(&b, func(f *flag.Flag) bool { return fs.config[f.Name] })
	}
	_, _ = io.WriteString(w, strings.ReplaceAll(b.String(), " \n", "\n"))
}

func (fs *flagSet) has(keep func(*flag.Flag) bool) bool {
	found := false
	fs.VisitAll(func(f *flag.Flag) { found = found || keep(f) })
	return found
}

// printFlags prints the kept flags as "--name TYPE", then the usage and a
// non-zero default on an indented line.
func (fs *flagSet) printFlags(b *strings.Builder, keep func(*flag.Flag) bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f) {
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		switch f.DefValue {
		case "", "0", "0s", "false":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		_, _ = fmt.Fprintf(b, "%s\n        %s\n", line, usage)
	})
}

// noArgs is a usage error when a command that takes no positional argument
// got some.
func (fs *flagSet) noArgs() error {
	if fs.NArg() > 0 {
		return fs.usageErr(fmt.Errorf("%s takes no arguments, got %q", fs.name, fs.Args()))
	}
	return nil
}

// versionCmd prints the version.
func versionCmd(args []string, env Env) error {
	fs := newFlags("version", env, false)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(env.Stdout, "harness", version())
	return err
}

// version returns the module version the binary was built from (a release
// tag, or the pseudo-version the go command stamps from the VCS), else
// "devel".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "devel"
}

// splitTool takes the positional tool name from args, before or after the
// flags.
func (fs *flagSet) splitTool(args []string) (string, config.Config, error) {
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	cfg, err := fs.parseConfig(args)
	if err != nil {
		return "", cfg, err
	}
	rest := fs.Args()
	if name == "" && len(rest) > 0 {
		name, rest = rest[0], rest[1:]
		if cfg, err = fs.parseConfig(rest); err != nil {
			return "", cfg, err
		}
		rest = fs.Args()
	}
	if len(rest) > 0 {
		return "", cfg, fs.usageErr(fmt.Errorf("unexpected arguments: %s", strings.Join(rest, " ")))
	}
	if name == "" {
		return "", cfg, fs.usageErr(errors.New("call needs a tool name: harness call TOOL --args JSON"))
	}
	return name, cfg, nil
}

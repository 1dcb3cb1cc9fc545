package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-go/harness/services/execsandbox"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// demo runs a short, real MCP session against `harness serve` (this very
// binary, as a child process) on a throwaway workspace and prints each call
// and result: a read, an edit, a write outside that is denied with the
// marker, an escalation that the (scripted) user declines, a command in the
// workspace, and a command writing outside that the kernel refuses, reported
// with the same marker.
func demo(ctx context.Context, args []string, env Env) error {
	fset := newFlags("demo", env, false)
	if err := fset.parse(args); err != nil {
		return err
	}
	if err := fset.noArgs(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	base, err := os.MkdirTemp("", "harness-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base) //nolint:errcheck // best-effort cleanup of a throwaway dir
	base, err = filepath.EvalSymlinks(base)
	if err != nil {
		return err
	}
	ws, outside := filepath.Join(base, "workspace"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("# Notes\nThe fence is kernel-tight.\n"), 0o644); err != nil {
		return err
	}
	out := env.Stdout
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format, a...) }
	// The server's flags; its policy is printed as `harness policy` with
	// the same flags (and the same HARNESS_* variables) reports it. The
	// temp area is the workspace itself, so the outside directory is
	// outside every writable root.
	serveArgs := []string{"--workspace", ws, "--mode", "workspace-write", "--temp-root", ws}
	pfs := newFlags("policy", env, true)
	cfg, err := pfs.parseFlagsOnly(serveArgs)
	if err != nil {
		return err
	}
	rep, err := resolvePolicy(ctx, cfg, env)
	if err != nil {
		return err
	}
	// Without a usable bubblewrap the demo still shows a confined command,
	// under the weaker isolation, and says so.
	fallback := ""
	if e := rep.Exec; e != nil && e.Isolation != nil && e.Isolation.Kind == execsandbox.IsolationBwrap && e.Isolation.Unavailable != "" {
		fallback = e.Isolation.Unavailable
		serveArgs = append(serveArgs, "--exec-isolation", execsandbox.IsolationLandlock)
		if cfg, err = newFlags("policy", env, true).parseFlagsOnly(serveArgs); err != nil {
			return err
		}
		if rep, err = resolvePolicy(ctx, cfg, env); err != nil {
			return err
		}
	}
	p("harness demo: a real MCP session with `harness serve` over stdio\n")
	p("server: harness serve %s\n", strings.Join(serveArgs, " "))
	p("its policy, as `harness policy` with the same flags prints it:\n%s", indent(strings.TrimSuffix(rep.String(), "\n"))+"\n")
	p("(--temp-root is the workspace itself, so the writable roots above are the workspace alone: by default workspace-write also gives each session a temp area of its own in /tmp)\n")
	if fallback != "" {
		p("(bubblewrap is unavailable, so this demo runs commands with --exec-isolation landlock, which confines less (see \"not confined\" above); %s)\n", fallback)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "harness-demo", Version: version()}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			p("\n   [elicitation] %s\n   [the user declines]\n", req.Params.Message)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cmd := exec.CommandContext(ctx, self, append(append([]string{"serve"}, serveArgs...), "--log-level", "warn")...)
	cmd.Stderr = env.Stderr
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close() //nolint:errcheck // the child exits with the session

	tools, err := cs.ListTools(cctx, nil)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(tools.Tools))
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	p("\n-> tools/list\n<- %s\n", strings.Join(names, ", "))

	calls := []struct {
		what string
		name string
		args map[string]any
	}{
		{"read a file", "read", map[string]any{"file_path": "notes.txt"}},
		{"edit it (the read authorized the edit)", "edit", map[string]any{"file_path": "notes.txt", "old_string": "kernel-tight", "new_string": "kernel-tight, and writes are durable"}},
		{"write outside every writable root: denied", "write", map[string]any{"file_path": filepath.Join(outside, "escape.txt"), "content": "x"}},
		{"ask to escalate: the user is asked, and declines", "write", map[string]any{
			"file_path": filepath.Join(outside, "escape.txt"), "content": "x",
			"sandbox_permissions": "danger-full-access", "justification": "The demo wants to show the approval prompt.",
		}},
		{"run a command in the workspace", "exec", map[string]any{"command": "wc -l notes.txt && echo built > build.log"}},
		{"run a command that writes outside: the kernel refuses it, the same marker", "exec", map[string]any{
			"command": "echo x > " + filepath.Join(outside, "from-command.txt"),
		}},
	}
	for _, c := range calls {
		var args strings.Builder
		enc := json.NewEncoder(&args)
		enc.SetEscapeHTML(false) // show "&&" and ">" as typed
		_ = enc.Encode(c.args)
		p("\n== %s\n-> tools/call %s %s", c.what, c.name, strings.TrimSuffix(args.String(), "\n"))
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			return err
		}
		printResult(out, res)
	}
	for _, name := range []string{"escape.txt", "from-command.txt"} {
		if _, err := os.Stat(filepath.Join(outside, name)); err == nil {
			return fmt.Errorf("demo: %s appeared outside the writable roots", name)
		}
	}
	p("\nnothing was written outside the writable roots; notes.txt now reads:\n")
	b, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	if err != nil {
		return err
	}
	p("%s", b)
	return nil
}

func printResult(out io.Writer, res *mcp.CallToolResult) {
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	status := "ok"
	if res.IsError {
		status = fmt.Sprintf("isError, code %v", res.Meta["harness/code"])
	}
	_, _ = fmt.Fprintf(out, "\n<- (%s)\n%s\n", status, indent(text.String()))
}

func indent(s string) string { return "   " + strings.ReplaceAll(s, "\n", "\n   ") }

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// layout is one case's directories, canonical: base holds the workspace
// (ws), a temp root (tmp) and a directory outside both (outside).
type layout struct {
	base, ws, tmp, outside string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws/a.txt: hello\nworld\n", "tmp/", "tmp2/", "outside/")
	return layout{
		base: base, ws: filepath.Join(base, "ws"),
		tmp: filepath.Join(base, "tmp"), outside: filepath.Join(base, "outside"),
	}
}

// landlockABI matches the kernel's Landlock ABI in the policy report (the
// commands' line and the fence's layers), which differs from machine to
// machine.
var landlockABI = regexp.MustCompile(`(Landlock ABI |"landlockABI": |landlock: ABI )\d+`)

// carvedOut matches whether the kernel lets commands run in a mount
// namespace (protected paths carved out), which differs too.
var carvedOut = regexp.MustCompile(`"protectedCarvedOut": (true|false)|existing protected paths read-only by bind mounts, ones created later are not|no mount namespace: protected paths are not carved out for commands`)

// limitsHow matches how the command caps apply (a cgroup where the server
// may make one, else rlimits), which differs between root and other users
// and between hosts.
var limitsHow = regexp.MustCompile(`"limits": "[^"]*"|command limits: .*`)

// runAs matches which user commands run as, which differs between root and
// other users.
var runAs = regexp.MustCompile(`"runAs": "[^"]*"|commands run as: .*`)

// denyReadHomes matches the homes `~` stands for in the deny-read set (the
// server user's, which differs between root and other users).
var denyReadHomes = regexp.MustCompile(`(?s)"homes": \[[^\]]*\]|; ~ is [^)]*\)`)

// journalDir matches the journal's directory in the policy report.
var journalDir = regexp.MustCompile(`"dir": "[^"]*"|journal:        [/$]\S*`)

// stable replaces the case's paths, the kernel's Landlock ABI, whether
// it allows a mount namespace and the deny-read homes with placeholders.
func (l layout) stable(s string) string {
	s = denyReadHomes.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"`) {
			return `"homes": $HOMES`
		}
		return "; ~ is $HOMES)"
	})
	s = strings.ReplaceAll(s, l.ws, "$WS")
	if state := os.Getenv("XDG_STATE_HOME"); state != "" {
		s = strings.ReplaceAll(s, state, "$STATE")
	}
	s = journalDir.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"`) {
			return `"dir": "$JOURNAL"`
		}
		return "journal:        $JOURNAL"
	})
	s = landlockABI.ReplaceAllString(s, "${1}$$ABI")
	s = runAs.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"`) {
			return `"runAs": "$RUNAS"`
		}
		return "commands run as: $RUNAS"
	})
	s = limitsHow.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"`) {
			return `"limits": "$LIMITS"`
		}
		return "command limits: $LIMITS"
	})
	s = carvedOut.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"`) {
			return `"protectedCarvedOut": $CARVED`
		}
		return "$CARVED"
	})
	return strings.ReplaceAll(s, l.base, "$BASE")
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// getenv returns a Getenv that knows only vars: nothing leaks from the
// process environment.
func getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// run is one cli.Run.
type run struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args []string, stdin string, terminal bool, vars map[string]string) run {
	t.Helper()
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := cli.Run(ctx, args, cli.Env{
		Stdin:           strings.NewReader(stdin),
		Stdout:          &stdout,
		Stderr:          &stderr,
		Getenv:          getenv(vars),
		StdinIsTerminal: terminal,
	})
	return run{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// embeddedHelper is `harness policy`'s command helper line in a test
// binary compiled with the helper embedded (make test,
// scripts/helper-flags.sh); the goldens hold the line of a plain go test
// build, plainHelper, which golden puts in its place.
var embeddedHelper = regexp.MustCompile(`the command helper this binary embeds \([0-9.]+ MB, its SHA-256 checked\), from a sealed in-memory copy`)

const plainHelper = "this binary itself, from a sealed in-memory copy (it embeds no command helper: built without make build, each command starts the whole binary, a few milliseconds more)"

// golden compares got with testdata/<name>.golden, or rewrites it under
// -update; the command helper line as a plain build gives it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = embeddedHelper.ReplaceAllLiteralString(got, plainHelper)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./internal/cli/ -run %s -update", t.Name())
	assert.Equal(t, string(want), got, "stdout differs from %s (rerun with -update after checking the change)", path)
}

// result is the JSON `call` prints.
type result struct {
	Meta    map[string]any `json:"_meta"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

func parseResult(t *testing.T, stdout string) result {
	t.Helper()
	var r result
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&r), stdout)
	require.Len(t, r.Content, 1)
	assert.Equal(t, "text", r.Content[0].Type)
	return r
}

// code returns the FS_* code of a printed error result.
func (r result) code() any { return r.Meta[mcpserver.CodeMetaKey] }

func (r result) text() string { return r.Content[0].Text }

// escalate is the arguments of a write of b.txt in the workspace that asks
// for workspace-write.
const escalate = `{"file_path":"b.txt","content":"escalated\n","sandbox_permissions":"workspace-write","justification":"The user asked for b.txt."}`

func TestRun(t *testing.T) {
	type tcase struct {
		name     string
		args     func(l layout) []string
		stdin    string
		terminal bool
		env      map[string]string
		code     int
		// golden names the stdout golden file; "" means stdout must be
		// empty unless stdout is set.
		golden string
		stdout func(t *testing.T, l layout, out string)
		// stderrIn are substrings stderr must contain; stderrNot, ones it
		// must not.
		stderrIn, stderrNot []string
		// disk checks the filesystem after the run; nil means the
		// workspace and the outside directory are unchanged.
		disk func(t *testing.T, l layout)
	}
	ws := func(l layout, args ...string) []string { return append(args, "--workspace", l.ws) }
	noFile := func(rel string) func(t *testing.T, l layout) {
		return func(t *testing.T, l layout) {
			t.Helper()
			assert.NoFileExists(t, filepath.Join(l.base, rel))
		}
	}
	fileIs := func(rel, content string) func(t *testing.T, l layout) {
		return func(t *testing.T, l layout) {
			t.Helper()
			b, err := os.ReadFile(filepath.Join(l.base, rel))
			require.NoError(t, err)
			assert.Equal(t, content, string(b))
		}
	}
	// isError checks a printed tool error: its _meta code (when code is
	// not "") and substrings of its text.
	isError := func(code string, textIn ...string) func(t *testing.T, l layout, out string) {
		return func(t *testing.T, _ layout, out string) {
			t.Helper()
			r := parseResult(t, out)
			assert.True(t, r.IsError)
			if code != "" {
				assert.EqualValues(t, code, r.code())
			}
			assert.Nil(t, r.StructuredContent)
			for _, s := range textIn {
				assert.Contains(t, r.text(), s)
			}
		}
	}
	// The prompt names the target (its temp path varies): check its two ends.
	const promptHead = "The agent asks to run the \"write\" tool to write 10 bytes (the whole file) on \""
	const prompt = "/ws/b.txt\". Under the current read-only mode this is refused: the read-only mode allows no writes. It asks to run under the workspace-write sandbox mode. Allowing it for the session lets every later call of the file tools in this session run under workspace-write without asking; commands are not covered. Its justification: The user asked for b.txt.\nAllow? [y = this call once, s = for the rest of the session, N = deny] "
	const modes = "read-only, workspace-write, danger-full-access"

	cases := []tcase{
		{
			name: "version",
			args: func(layout) []string { return []string{"version"} },
			code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.Regexp(t, regexp.MustCompile(`^harness \S+\n$`), out)
			},
		},
		{
			name: "--version", args: func(layout) []string { return []string{"--version"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.Regexp(t, regexp.MustCompile(`^harness \S+\n$`), out)
			},
		},
		{
			name: "version --help", args: func(layout) []string { return []string{"version", "--help"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) { assert.Contains(t, out, "Usage: harness version") },
		},
		{
			name: "help", args: func(layout) []string { return []string{"help"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.Contains(t, out, "Usage:")
				for _, c := range []string{"serve", "call", "tools", "policy", "history", "undo", "demo", "version", "help"} {
					assert.Contains(t, out, "\n  harness "+c+" ")
				}
				assert.Contains(t, out, "harness COMMAND --help")
			},
		},
		{
			name: "--help prints the overview on stdout", args: func(layout) []string { return []string{"--help"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) { assert.Contains(t, out, "harness COMMAND --help") },
		},
		{
			name: "-h prints the overview on stdout", args: func(layout) []string { return []string{"-h"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) { assert.Contains(t, out, "harness COMMAND --help") },
		},
		{
			name: "help --help prints help's own usage", args: func(layout) []string { return []string{"help", "--help"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.True(t, strings.HasPrefix(out, "Usage: harness help [COMMAND | --markdown]\n"), out)
			},
		},
		{
			name: "a duration flag without a unit says what it wants", code: cli.ExitUsage,
			args:     func(l layout) []string { return []string{"policy", "--roots-timeout", "5"} },
			stderrIn: []string{"harness: policy: --roots-timeout \"5\": want a duration with its unit, such as 30s, 2m or 500ms\n"},
		},
		{
			name: "a boolean flag says what it wants", code: cli.ExitUsage,
			args:     func(l layout) []string { return []string{"tools", "--invariants=maybe"} },
			stderrIn: []string{"harness: tools: --invariants \"maybe\": want true or false\n"}, stderrNot: []string{"parse error"},
		},
		{
			name: "a bad --arg says what it wants", code: cli.ExitUsage,
			args:     func(l layout) []string { return []string{"call", "read", "--arg", "file_path"} },
			stderrIn: []string{"harness: call: --arg \"file_path\": want key=value\n"},
		},
		{name: "help call", args: func(layout) []string { return []string{"help", "call"} }, code: cli.ExitOK, golden: "help_call"},
		{name: "call --help", args: func(layout) []string { return []string{"call", "--help"} }, code: cli.ExitOK, golden: "help_call"},
		{name: "call read --help", args: func(layout) []string { return []string{"call", "read", "--help"} }, code: cli.ExitOK, golden: "help_call"},
		{name: "call -h", args: func(layout) []string { return []string{"call", "-h"} }, code: cli.ExitOK, golden: "help_call"},
		{name: "help serve", args: func(layout) []string { return []string{"help", "serve"} }, code: cli.ExitOK, golden: "help_serve"},
		{name: "serve --help", args: func(layout) []string { return []string{"serve", "--help"} }, code: cli.ExitOK, golden: "help_serve"},
		{name: "serve -h", args: func(layout) []string { return []string{"serve", "-h"} }, code: cli.ExitOK, golden: "help_serve"},
		{name: "help policy", args: func(layout) []string { return []string{"help", "policy"} }, code: cli.ExitOK, golden: "help_policy"},
		{name: "help history", args: func(layout) []string { return []string{"help", "history"} }, code: cli.ExitOK, golden: "help_history"},
		{name: "history --help", args: func(layout) []string { return []string{"history", "--help"} }, code: cli.ExitOK, golden: "help_history"},
		{name: "help undo", args: func(layout) []string { return []string{"help", "undo"} }, code: cli.ExitOK, golden: "help_undo"},
		{name: "undo --help", args: func(layout) []string { return []string{"undo", "--help"} }, code: cli.ExitOK, golden: "help_undo"},
		{name: "policy --help", args: func(layout) []string { return []string{"policy", "--help"} }, code: cli.ExitOK, golden: "help_policy"},
		{
			name: "help tools", args: func(layout) []string { return []string{"help", "tools"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.True(t, strings.HasPrefix(out, "Usage: harness tools [flags]\n"), out)
				assert.Contains(t, out, "\n  --workspace DIR\n")
			},
		},
		{
			name: "demo --help", args: func(layout) []string { return []string{"demo", "--help"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.True(t, strings.HasPrefix(out, "Usage: harness demo\n"), out)
				assert.NotContains(t, out, "--mode", "demo takes no configuration flags")
			},
		},
		{
			name: "help demo", args: func(layout) []string { return []string{"help", "demo"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.True(t, strings.HasPrefix(out, "Usage: harness demo\n"), out)
			},
		},
		{
			name: "help help prints help's usage", args: func(layout) []string { return []string{"help", "help"} }, code: cli.ExitOK,
			stdout: func(t *testing.T, _ layout, out string) {
				assert.True(t, strings.HasPrefix(out, "Usage: harness help [COMMAND | --markdown]\n"), out)
			},
		},
		{
			name: "help --markdown takes no command", args: func(layout) []string { return []string{"help", "--markdown", "serve"} }, code: cli.ExitUsage,
			stderrIn: []string{"harness: help: --markdown takes no command: it prints them all"},
		},
		{
			name: "help bogus fails", args: func(layout) []string { return []string{"help", "bogus"} }, code: cli.ExitUsage,
			stderrIn: []string{`harness: help: unknown command "bogus"`, "Run 'harness help' for the commands."},
		},
		{
			name: "help srve suggests serve", args: func(layout) []string { return []string{"help", "srve"} }, code: cli.ExitUsage,
			stderrIn: []string{`harness: help: unknown command "srve" (did you mean "serve"?)`},
		},
		{
			name: "call read --args", code: cli.ExitOK, golden: "call_read",
			args: func(l layout) []string { return ws(l, "call", "read", "--args", `{"file_path":"a.txt"}`) },
			stdout: func(t *testing.T, _ layout, out string) {
				r := parseResult(t, out)
				assert.False(t, r.IsError)
				assert.Nil(t, r.Meta)
				assert.Contains(t, r.text(), "1: hello\n2: world")
				assert.NotNil(t, r.StructuredContent)
			},
		},
		{
			name: "call with the tool name after the flags", code: cli.ExitOK, golden: "call_read",
			args: func(l layout) []string {
				return []string{"call", "--workspace", l.ws, "--args", `{"file_path":"a.txt"}`, "read"}
			},
		},
		{
			name: "call read --arg wins over --args", code: cli.ExitOK, golden: "call_read",
			args: func(l layout) []string {
				return ws(l, "call", "read", "--args", `{"file_path":"missing.txt"}`, "--arg", "file_path=a.txt")
			},
		},
		{
			name: "call read --arg of a missing file", code: cli.ExitToolError, golden: "call_read_missing",
			args:   func(l layout) []string { return ws(l, "call", "read", "--arg", "file_path=missing.txt") },
			stdout: isError("FS_NOT_FOUND", "not found"),
		},
		{
			name: "call read without arguments is an argument error", code: cli.ExitToolError,
			args:   func(l layout) []string { return ws(l, "call", "read") },
			stdout: isError("INVALID_ARGUMENT", "file_path"),
		},
		{
			name: "call write inside under the default read-only mode is denied", code: cli.ExitToolError,
			golden: "call_write_readonly_denied",
			args: func(l layout) []string {
				return ws(l, "call", "write", "--args", `{"file_path":"new.txt","content":"x"}`)
			},
			stdout: isError("FS_SANDBOX_DENIED", "[sandbox: file access denied under read-only mode]\n[sandbox: no escalation here:"),
			disk:   noFile("ws/new.txt"),
		},
		{
			name: "a read of a deny-read file without a terminal says how to allow it, not to escalate", code: cli.ExitToolError,
			args: func(l layout) []string {
				if err := os.WriteFile(filepath.Join(l.ws, ".env"), []byte("TOKEN=1\n"), 0o644); err != nil {
					panic(err)
				}
				return ws(l, "call", "read", "--arg", "file_path=.env")
			},
			stdout: isError("FS_READ_DENIED", "\n[sandbox: no escalation here: harness call asks for approval only on a terminal or with --approval prompt; "+
				"to read it, run it again without the deny-read pattern that covers it (--allow-read drops a default one)]"),
		},
		{
			name: "call write inside under workspace-write lands", code: cli.ExitOK, golden: "call_write_inside",
			args: func(l layout) []string {
				return ws(l, "call", "write", "--mode", "workspace-write", "--temp-root", l.tmp,
					"--args", `{"file_path":"new.txt","content":"fresh\n"}`)
			},
			stdout: func(t *testing.T, _ layout, out string) {
				r := parseResult(t, out)
				assert.False(t, r.IsError)
				assert.Equal(t, "create", r.StructuredContent["operation"])
			},
			disk: fileIs("ws/new.txt", "fresh\n"),
		},
		{
			name: "HARNESS_MODE reaches call", code: cli.ExitOK, golden: "call_write_inside",
			// The temp root is the test's own: a write's protected-path
			// search walks every writable root (/usr took 59 s at load 12).
			env: map[string]string{"HARNESS_MODE": "workspace-write"},
			args: func(l layout) []string {
				return ws(l, "call", "write", "--temp-root", l.tmp, "--args", `{"file_path":"new.txt","content":"fresh\n"}`)
			},
			disk: fileIs("ws/new.txt", "fresh\n"),
		},
		{
			name: "call write outside under workspace-write is denied", code: cli.ExitToolError,
			golden: "call_write_outside_denied",
			args: func(l layout) []string {
				return ws(l, "call", "write", "--mode", "workspace-write", "--temp-root", l.tmp,
					"--args", `{"file_path":"`+filepath.Join(l.outside, "escape.txt")+`","content":"x"}`)
			},
			stdout: isError("FS_SANDBOX_DENIED", "[sandbox: file access denied under workspace-write mode]\n[sandbox: no escalation here: harness call asks for approval only on a terminal or with --approval prompt; to allow this, run it again with a wider --mode]"),
			disk:   noFile("outside/escape.txt"),
		},
		{
			name: "call write outside with --approval deny advertises the escalation it can answer", code: cli.ExitToolError,
			args: func(l layout) []string {
				return ws(l, "call", "write", "--mode", "workspace-write", "--temp-root", l.tmp, "--approval", "deny",
					"--args", `{"file_path":"`+filepath.Join(l.outside, "escape.txt")+`","content":"x"}`)
			},
			stdout: isError("FS_SANDBOX_DENIED", "[sandbox: file access denied under workspace-write mode]\n[sandbox: escalation available", "sandbox_permissions"),
			disk:   noFile("outside/escape.txt"),
		},
		{
			name: "call write overwrites: a one-shot call has no read-before-write policy", code: cli.ExitOK, golden: "call_write_oneshot",
			args: func(l layout) []string {
				return ws(l, "call", "write", "--mode", "workspace-write", "--temp-root", l.tmp,
					"--args", `{"file_path":"a.txt","content":"clobbered"}`)
			},
			disk: fileIs("ws/a.txt", "clobbered"),
		},
		{
			name: "call edit applies: a one-shot call has no read-before-write policy", code: cli.ExitOK, golden: "call_edit_oneshot",
			args: func(l layout) []string {
				return ws(l, "call", "edit", "--mode", "workspace-write", "--temp-root", l.tmp,
					"--args", `{"file_path":"a.txt","old_string":"hello","new_string":"bye"}`)
			},
			disk: fileIs("ws/a.txt", "bye\nworld\n"),
		},
		{
			name: "escalation with --approval deny is rejected", code: cli.ExitToolError, golden: "call_escalate_rejected",
			args:   func(l layout) []string { return ws(l, "call", "write", "--approval", "deny", "--args", escalate) },
			stdin:  "y\n",
			stdout: isError("SANDBOX_ESCALATION_REFUSED", `the user rejected escalating this operation to "workspace-write"`),
			disk:   noFile("ws/b.txt"),
		},
		{
			name: "escalation with --approval prompt and y lands", code: cli.ExitOK, golden: "call_escalate_allowed",
			args:     func(l layout) []string { return ws(l, "call", "write", "--approval", "prompt", "--args", escalate) },
			stdin:    "y\n",
			stderrIn: []string{promptHead, prompt},
			disk:     fileIs("ws/b.txt", "escalated\n"),
		},
		{
			name: "escalation with --approval prompt and yes lands", code: cli.ExitOK, golden: "call_escalate_allowed",
			args:     func(l layout) []string { return ws(l, "call", "write", "--approval", "prompt", "--args", escalate) },
			stdin:    " YES \n",
			stderrIn: []string{promptHead, prompt},
			disk:     fileIs("ws/b.txt", "escalated\n"),
		},
		{
			name: "escalation with --approval prompt and n is rejected", code: cli.ExitToolError, golden: "call_escalate_rejected",
			args:     func(l layout) []string { return ws(l, "call", "write", "--approval", "prompt", "--args", escalate) },
			stdin:    "n\n",
			stderrIn: []string{promptHead, prompt},
			disk:     noFile("ws/b.txt"),
		},
		{
			name: "escalation with --approval prompt and an empty line is rejected", code: cli.ExitToolError,
			golden: "call_escalate_rejected",
			args:   func(l layout) []string { return ws(l, "call", "write", "--approval", "prompt", "--args", escalate) },
			stdin:  "\n",
			disk:   noFile("ws/b.txt"),
		},
		{
			name: "escalation with --approval prompt and no input is cancelled", code: cli.ExitToolError,
			args:   func(l layout) []string { return ws(l, "call", "write", "--approval", "prompt", "--args", escalate) },
			stdout: isError("SANDBOX_ESCALATION_REFUSED", "cancel"),
			disk:   noFile("ws/b.txt"),
		},
		{
			name: "escalation with the default approval and no terminal is unavailable", code: cli.ExitToolError,
			golden: "call_escalate_unavailable",
			args:   func(l layout) []string { return ws(l, "call", "write", "--args", escalate) },
			stdin:  "y\n",
			stdout: isError("SANDBOX_ESCALATION_REFUSED", "requires approval, but no approval channel is available"),
			disk:   noFile("ws/b.txt"),
		},
		{
			name: "escalation with the default approval on a terminal prompts", code: cli.ExitOK, golden: "call_escalate_allowed",
			args:     func(l layout) []string { return ws(l, "call", "write", "--args", escalate) },
			stdin:    "y\n",
			terminal: true,
			stderrIn: []string{promptHead, prompt},
			disk:     fileIs("ws/b.txt", "escalated\n"),
		},
		{
			name: "escalation outside to danger-full-access with prompt y lands", code: cli.ExitOK,
			args: func(l layout) []string {
				return ws(l, "call", "write", "--approval", "prompt", "--mode", "workspace-write", "--temp-root", l.tmp,
					"--args", `{"file_path":"`+filepath.Join(l.outside, "granted.txt")+`","content":"g","sandbox_permissions":"danger-full-access","justification":"j"}`)
			},
			stdin:    "y\n",
			stderrIn: []string{"The agent asks to run the \"write\" tool to write 1 bytes (the whole file) on \"", "/outside/granted.txt\". Under the current workspace-write mode this is refused: outside the writable roots. It asks to run under the danger-full-access sandbox mode, with no sandbox: the call may change any file the server's user can. Allowing it for the session lets every later call of the file tools in this session run under danger-full-access without asking; commands are not covered. Its justification: j\nAllow? [y = this call once"},
			stdout: func(t *testing.T, _ layout, out string) {
				assert.False(t, parseResult(t, out).IsError)
			},
			disk: fileIs("outside/granted.txt", "g"),
		},
		{
			name: "call with bad JSON in --args", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "--args", `{"file_path":`) },
			stderrIn: []string{"--args"},
		},
		{
			name: "call with a JSON array in --args", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "--args", `["a.txt"]`) },
			stderrIn: []string{"--args must be a JSON object"},
		},
		{
			name: "call with null --args", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "--args", `null`) },
			stderrIn: []string{"--args must be a JSON object"},
		},
		{
			name: "call with an --arg without =", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "--arg", "file_path") },
			stderrIn: []string{"--arg", "key=value"},
		},
		{
			name: "call with an unknown tool lists the tools", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "frobnicate", "--args", `{}`) },
			stderrIn: []string{`unknown tool "frobnicate"`, "delete, edit, exec, exec_input, exec_kill, exec_output, glob, grep, list, mkdir, move, read, write"},
		},
		{
			name: "call without a tool name", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call") },
			stderrIn: []string{"call needs a tool name"},
		},
		{
			name: "call with two tool names", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "list") },
			stderrIn: []string{"unexpected arguments: list"},
		},
		{
			name: "call with a bad --approval", code: cli.ExitUsage,
			args: func(l layout) []string {
				return ws(l, "call", "read", "--approval", "always", "--arg", "file_path=a.txt")
			},
			stderrIn: []string{"--approval", `"always"`, "deny, prompt"},
		},
		{
			name: "call with --mode yolo lists the allowed values", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "--mode", "yolo", "--arg", "file_path=a.txt") },
			stderrIn: []string{"--mode", `"yolo"`, modes},
		},
		{
			name: "HARNESS_MODE yolo is a usage error naming the variable", code: cli.ExitUsage,
			env:       map[string]string{"HARNESS_MODE": "yolo"},
			args:      func(l layout) []string { return ws(l, "policy") },
			stderrIn:  []string{"harness: HARNESS_MODE: ", `"yolo"`, modes},
			stderrNot: []string{"--mode"},
		},
		{
			name: "HARNESS_MODE bogus names the variable", code: cli.ExitUsage,
			env:       map[string]string{"HARNESS_MODE": "bogus"},
			args:      func(l layout) []string { return ws(l, "call", "read", "--arg", "file_path=a.txt") },
			stderrIn:  []string{"harness: HARNESS_MODE: unknown value \"bogus\""},
			stderrNot: []string{"--mode"},
		},
		{
			name: "a bad YAML value names the file and key", code: cli.ExitUsage,
			args: func(l layout) []string {
				p := filepath.Join(l.base, "harness.yaml")
				require.NoError(t, os.WriteFile(p, []byte("fs: sandbox\nmode: bogus\n"), 0o600))
				return ws(l, "policy", "--config", p)
			},
			stderrIn:  []string{"harness.yaml:2: key \"mode\": unknown value \"bogus\""},
			stderrNot: []string{"--mode"},
		},
		{
			name: "--temp-root must exist", code: cli.ExitUsage,
			args: func(l layout) []string {
				return ws(l, "policy", "--mode", "workspace-write", "--temp-root", filepath.Join(l.base, "nonexistent"))
			},
			stderrIn: []string{`harness: --temp-root "`, `/nonexistent": not an existing directory`},
		},
		{
			name: "policy with --mode yolo", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "policy", "--mode", "yolo") },
			stderrIn: []string{"--mode", modes},
		},
		{
			name: "an unknown flag", code: cli.ExitUsage,
			args:      func(l layout) []string { return ws(l, "tools", "--yolo") },
			stderrIn:  []string{"harness: tools: unknown flag --yolo\nRun 'harness tools --help' for its flags.\n"},
			stderrNot: []string{"flag provided but not defined", "did you mean", "Usage"},
		},
		{
			name: "an unknown flag of call", code: cli.ExitUsage,
			args:      func(l layout) []string { return ws(l, "call", "read", "--bogus") },
			stderrIn:  []string{"harness: call: unknown flag --bogus"},
			stderrNot: []string{"flag provided but not defined"},
		},
		{
			name: "serve --mdoe suggests --mode", code: cli.ExitUsage,
			args:      func(l layout) []string { return ws(l, "serve", "--mdoe", "x") },
			stderrIn:  []string{"harness: serve: unknown flag --mdoe (did you mean --mode?)\nRun 'harness serve --help' for its flags.\n"},
			stderrNot: []string{"flag provided but not defined", "Usage"},
		},
		{
			name: "call --aprroval suggests --approval", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "--aprroval", "deny") },
			stderrIn: []string{"harness: call: unknown flag --aprroval (did you mean --approval?)", "harness call --help"},
		},
		{
			name: "a flag without its value", code: cli.ExitUsage,
			args:     func(l layout) []string { return []string{"policy", "--mode"} },
			stderrIn: []string{"harness: policy: --mode needs a value", "harness policy --help"},
		},
		{
			name: "a bad integer flag value names the flag", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "policy", "--read-limit", "many") },
			stderrIn: []string{`harness: policy: --read-limit "many": want a whole number`},
		},
		{
			name: "call write --arg content=42 writes the string 42", code: cli.ExitOK,
			args: func(l layout) []string {
				return ws(l, "call", "write", "--mode", "workspace-write", "--arg", "file_path=n.txt", "--arg", "content=42")
			},
			stdout: func(t *testing.T, _ layout, out string) { assert.False(t, parseResult(t, out).IsError, out) },
			disk:   fileIs("ws/n.txt", "42"),
		},
		{
			name: "call write --arg content=true writes the string true", code: cli.ExitOK,
			args: func(l layout) []string {
				return ws(l, "call", "write", "--mode", "workspace-write", "--arg", "file_path=n.txt", "--arg", "content=true")
			},
			stdout: func(t *testing.T, _ layout, out string) { assert.False(t, parseResult(t, out).IsError, out) },
			disk:   fileIs("ws/n.txt", "true"),
		},
		{
			name: "call write --arg content={} writes the text {}", code: cli.ExitOK,
			args: func(l layout) []string {
				return ws(l, "call", "write", "--mode", "workspace-write", "--arg", "file_path=n.txt", "--arg", "content={}")
			},
			stdout: func(t *testing.T, _ layout, out string) { assert.False(t, parseResult(t, out).IsError, out) },
			disk:   fileIs("ws/n.txt", "{}"),
		},
		{
			name: "call read --arg limit=1 is the integer 1", code: cli.ExitOK,
			args: func(l layout) []string { return ws(l, "call", "read", "--arg", "file_path=a.txt", "--arg", "limit=1") },
			stdout: func(t *testing.T, _ layout, out string) {
				r := parseResult(t, out)
				require.False(t, r.IsError, out)
				assert.Equal(t, []any{map[string]any{"number": float64(1), "text": "hello"}}, r.StructuredContent["lines"])
			},
		},
		{
			name: "call read --arg limit=abc is a usage error naming the argument", code: cli.ExitUsage,
			args: func(l layout) []string {
				return ws(l, "call", "read", "--arg", "file_path=a.txt", "--arg", "limit=abc")
			},
			stderrIn: []string{"harness: --arg limit=abc: limit takes an integer"},
		},
		{
			name: "call read --arg limit=1.5 is a usage error", code: cli.ExitUsage,
			args: func(l layout) []string {
				return ws(l, "call", "read", "--arg", "file_path=a.txt", "--arg", "limit=1.5")
			},
			stderrIn: []string{"--arg limit=1.5: limit takes an integer"},
		},
		{
			name: "call edit --arg replace_all=true is the boolean", code: cli.ExitOK,
			args: func(l layout) []string {
				return ws(l, "call", "edit", "--mode", "workspace-write", "--arg", "file_path=a.txt",
					"--arg", "old_string=o", "--arg", "new_string=0", "--arg", "replace_all=true")
			},
			stdout: func(t *testing.T, _ layout, out string) { assert.False(t, parseResult(t, out).IsError, out) },
			disk:   fileIs("ws/a.txt", "hell0\nw0rld\n"),
		},
		{
			name: "call edit --arg replace_all=yes is a usage error", code: cli.ExitUsage,
			args: func(l layout) []string {
				return ws(l, "call", "edit", "--mode", "workspace-write", "--arg", "file_path=a.txt",
					"--arg", "old_string=o", "--arg", "new_string=0", "--arg", "replace_all=yes")
			},
			stderrIn: []string{"--arg replace_all=yes: replace_all takes true or false"},
		},
		{
			name: "an --arg the schema does not declare is refused by name (issue 21)", code: cli.ExitToolError, golden: "call_unknown_arg",
			args: func(l layout) []string {
				return ws(l, "call", "read", "--arg", "file_path=a.txt", "--arg", "fle_path=b.txt")
			},
		},
		{
			name: "--log-level debug carries no dependency wiring", code: cli.ExitOK, golden: "call_read",
			args: func(l layout) []string {
				return ws(l, "call", "read", "--arg", "file_path=a.txt", "--log-level", "debug")
			},
			stderrNot: []string{"\tfx\t", "provided", "stacktrace"},
		},
		{
			name: "--log-level trace carries the dependency wiring", code: cli.ExitOK, golden: "call_read",
			args: func(l layout) []string {
				return ws(l, "call", "read", "--arg", "file_path=a.txt", "--log-level", "trace")
			},
			stderrIn: []string{"trace\tfx\tprovided"},
		},
		{
			name: "serve on a terminal says what it speaks and how to try it", code: cli.ExitOK, terminal: true,
			args: func(l layout) []string { return ws(l, "serve") },
			stderrIn: []string{
				"harness serve speaks MCP (JSON-RPC, one message a line) on stdin and stdout",
				" demo\n", `{"mcpServers":{"harness":{"command":`,
			},
		},
		{
			name: "--invariants runs the composition with its contracts checked", code: cli.ExitOK, golden: "call_read",
			args: func(l layout) []string {
				return ws(l, "call", "read", "--invariants", "--args", `{"file_path":"a.txt"}`)
			},
		},
		{
			name: "tools", code: cli.ExitOK, golden: "tools",
			args: func(l layout) []string { return ws(l, "tools") },
			stdout: func(t *testing.T, _ layout, out string) {
				var tools []map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &tools))
				require.Len(t, tools, 13)
				var names []string
				for _, tl := range tools {
					names = append(names, tl["name"].(string))
				}
				assert.Equal(t, []string{"delete", "edit", "exec", "exec_input", "exec_kill", "exec_output", "glob", "grep", "list", "mkdir", "move", "read", "write"}, names)
			},
		},
		{
			name: "tools --fs local --exec local has no escalation arguments", code: cli.ExitOK,
			args: func(l layout) []string { return ws(l, "tools", "--fs", "local", "--exec", "local") },
			stdout: func(t *testing.T, _ layout, out string) {
				var tools []mcp.Tool
				require.NoError(t, json.Unmarshal([]byte(out), &tools))
				require.Len(t, tools, 13)
				assert.NotContains(t, out, "sandbox_permissions")
				assert.NotContains(t, out, "justification")
			},
		},
		{
			// BUG: tools ignores positional arguments (exit 0), unlike
			// serve and call, which reject them.
			name: "tools with an argument is a usage error", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "tools", "extra") },
			stderrIn: []string{"extra"},
		},
		{
			// BUG: policy ignores positional arguments (exit 0), unlike
			// serve and call, which reject them.
			name: "policy with an argument is a usage error", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "policy", "extra") },
			stderrIn: []string{"extra"},
		},
		{
			name: "policy", code: cli.ExitOK, golden: "policy_workspace_write",
			args: func(l layout) []string {
				return ws(l, "policy", "--mode", "workspace-write", "--temp-root", l.tmp, "--temp-root", filepath.Join(l.base, "tmp2"))
			},
		},
		{
			name: "policy --json", code: cli.ExitOK, golden: "policy_workspace_write_json",
			args: func(l layout) []string {
				return ws(l, "policy", "--json", "--mode", "workspace-write", "--temp-root", l.tmp, "--temp-root", filepath.Join(l.base, "tmp2"))
			},
			stdout: func(t *testing.T, l layout, out string) {
				var rep cli.PolicyReport
				require.NoError(t, json.Unmarshal([]byte(out), &rep))
				require.GreaterOrEqual(t, len(rep.Layers), 3)
				assert.Contains(t, rep.Layers[0], "policy check")
				assert.Contains(t, rep.Layers[1], "confined handle")
				assert.Contains(t, rep.Layers[2], "landlock: ")
				assert.Contains(t, rep.ProtectedPaths[0], ".git (at any depth, and every git directory: config, config.worktree, hooks/")
				assert.Contains(t, rep.ProtectedPaths, ".mcp.json (host-run file, at any depth; --unprotect .mcp.json to allow)")
				rep.Layers, rep.ProtectedPaths = nil, nil
				assert.Contains(t, rep.DenyRead.Patterns, "~/.ssh (default; --allow-read ~/.ssh to allow)")
				assert.Contains(t, rep.DenyRead.Patterns, ".env (default; --allow-read .env to allow)")
				require.NotEmpty(t, rep.DenyRead.Homes, "the server user's home")
				for _, h := range rep.DenyRead.Homes {
					assert.True(t, filepath.IsAbs(h), h)
				}
				rep.DenyRead = cli.DenyReadReport{}
				require.NotNil(t, rep.Exec)
				require.NotNil(t, rep.Exec.Isolation)
				iso := rep.Exec.Isolation
				assert.Equal(t, "bwrap", iso.Kind)
				assert.Contains(t, iso.Limits, "512 processes")
				assert.Contains(t, iso.RunAs, "uid ")
				assert.NotEmpty(t, iso.NotCovered)
				rep.Exec.Isolation = nil
				assert.Equal(t, cli.ExecReport{
					Runner: "sandbox", Confines: true, LandlockABI: rep.Exec.LandlockABI, Seccomp: rep.Exec.Seccomp,
					Network: "deny", UnixSockets: "deny", ProtectedCarvedOut: iso.Unavailable == "", KeptCurrent: rep.Exec.KeptCurrent,
				}, *rep.Exec)
				assert.NotEmpty(t, rep.Exec.KeptCurrent)
				rep.Exec = nil
				assert.Equal(t, &cli.JournalReport{Dir: filepath.Join(os.Getenv("XDG_STATE_HOME"), "harness", "journal"), MaxBytes: 1 << 30}, rep.Journal)
				rep.Journal = nil
				assert.Equal(t, cli.PolicyReport{
					Backend: "sandbox", Confines: true, Mode: "workspace-write", WorkspaceRoot: l.ws,
					WritableRoots: []string{l.ws}, SessionTemp: l.tmp,
				}, rep)
			},
		},
		{
			name: "policy --landlock off --protect names the fallback and lists the protected paths", code: cli.ExitOK, golden: "policy_landlock_off",
			args: func(l layout) []string {
				return ws(l, "policy", "--mode", "workspace-write", "--landlock", "off", "--protect", "*.pem", "--temp-root", l.tmp)
			},
			stdout: func(t *testing.T, _ layout, out string) {
				assert.Contains(t, out, "  .git (at any depth, and every git directory: ")
				assert.Contains(t, out, "  .vscode/ (host-run file, at any depth; --unprotect .vscode to allow)\n")
				assert.Contains(t, out, "  *.pem (--protect)\n")
				assert.Contains(t, out, "landlock: turned off by configuration")
				assert.Contains(t, out, "fallback: publication by exchange")
			},
		},
		{
			name: "policy read-only", code: cli.ExitOK, golden: "policy_read_only",
			args: func(l layout) []string { return ws(l, "policy", "--temp-root", l.tmp) },
		},
		{
			name: "policy --json read-only", code: cli.ExitOK, golden: "policy_read_only_json",
			args: func(l layout) []string { return ws(l, "policy", "--json", "--temp-root", l.tmp) },
		},
		{
			name: "policy danger-full-access", code: cli.ExitOK, golden: "policy_danger",
			args: func(l layout) []string { return ws(l, "policy", "--mode", "danger-full-access", "--temp-root", l.tmp) },
		},
		{
			name: "policy --fs local says it does not confine", code: cli.ExitOK, golden: "policy_local",
			args: func(l layout) []string { return ws(l, "policy", "--fs", "local") },
			stdout: func(t *testing.T, _ layout, out string) {
				assert.Contains(t, out, "confines:       no")
				assert.Contains(t, out, "writable roots: everywhere")
			},
		},
		{
			name: "--fs local with --mode workspace-write is a start error that says why", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "policy", "--fs", "local", "--mode", "workspace-write") },
			stderrIn: []string{`--mode: "workspace-write" conflicts with --fs local: the local backend never confines, so it always runs as danger-full-access`},
		},
		{
			name: "--fs local with HARNESS_MODE=read-only names the variable", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "policy", "--fs", "local") },
			env:      map[string]string{"HARNESS_MODE": "read-only"},
			stderrIn: []string{`HARNESS_MODE: "read-only" conflicts with --fs local`},
		},
		{
			name: "--fs local with --mode danger-full-access is consistent", code: cli.ExitOK, golden: "policy_local",
			args: func(l layout) []string { return ws(l, "policy", "--fs", "local", "--mode", "danger-full-access") },
		},
		{
			name: "policy --json --fs local", code: cli.ExitOK, golden: "policy_local_json",
			args: func(l layout) []string { return ws(l, "policy", "--json", "--fs", "local") },
			stdout: func(t *testing.T, l layout, out string) {
				var rep cli.PolicyReport
				require.NoError(t, json.Unmarshal([]byte(out), &rep))
				assert.False(t, rep.Confines)
				assert.Equal(t, "danger-full-access", rep.Mode)
				assert.Equal(t, []string{}, rep.WritableRoots)
			},
		},
		{
			name: "policy from a YAML --config", code: cli.ExitOK, golden: "policy_workspace_write_config",
			args: func(l layout) []string {
				p := filepath.Join(l.base, "harness.yaml")
				yaml := "mode: workspace-write\nworkspace: " + l.ws + "\ntemp-root:\n  - " + l.tmp + "\n  - " + filepath.Join(l.base, "tmp2") + "\n"
				require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
				return []string{"policy", "--config", p}
			},
		},
		{
			name: "policy lists --deny-read and leaves out what --allow-read drops", code: cli.ExitOK,
			args: func(l layout) []string {
				return ws(l, "policy", "--deny-read", "*.pem", "--deny-read", "/srv/keys/", "--allow-read", "~/.npmrc", "--allow-read", ".env")
			},
			stdout: func(t *testing.T, _ layout, out string) {
				_, list, ok := strings.Cut(out, "\ndeny-read (the file tools and commands read none of these, in every mode; ~ is ")
				require.True(t, ok, out)
				list, _, _ = strings.Cut(list, "\ncommands:")
				assert.Contains(t, list, "\n  ~/.ssh (default; --allow-read ~/.ssh to allow)\n")
				assert.Contains(t, list, "\n  .env.* (default; --allow-read .env.* to allow)\n")
				assert.Contains(t, list, "\n  *.pem (--deny-read)\n  /srv/keys/ (--deny-read)")
				assert.NotContains(t, list, "~/.npmrc")
				assert.NotContains(t, list, "  .env (")
			},
		},
		{
			name: "policy --json lists the deny-read set from YAML", code: cli.ExitOK,
			args: func(l layout) []string {
				p := filepath.Join(l.base, "harness.yaml")
				require.NoError(t, os.WriteFile(p, []byte("deny-read: [\"*.key\"]\nallow-read: [~/.aws]\n"), 0o600))
				return ws(l, "policy", "--json", "--config", p)
			},
			stdout: func(t *testing.T, l layout, out string) {
				var rep cli.PolicyReport
				require.NoError(t, json.Unmarshal([]byte(out), &rep))
				p := rep.DenyRead.Patterns
				assert.Contains(t, p, "*.key (--deny-read)")
				assert.NotContains(t, p, "~/.aws (default; --allow-read ~/.aws to allow)")
				assert.Contains(t, p, filepath.Join(l.base, "harness.yaml")+" (harness's own file)", "the config file is denied too")
			},
		},
		{
			name: "a bad --deny-read is a start error naming the flag and the remedy", code: cli.ExitUsage,
			args: func(l layout) []string {
				return ws(l, "serve", "--deny-read", "*.pem", "--deny-read", "config/secrets.yaml")
			},
			stderrIn:  []string{"harness: --deny-read: \"config/secrets.yaml\": a relative pattern with a slash is ambiguous: write /abs/path, ~/path, or **/dir/file for any depth\n"},
			stderrNot: []string{"sandboxpolicy", "could not build"},
		},
		{
			name: "HARNESS_ALLOW_READ of no default is a start error naming the variable", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "call", "read", "--arg", "file_path=a.txt") },
			env:      map[string]string{"HARNESS_ALLOW_READ": "~/.ssh/id_ed25519"},
			stderrIn: []string{"harness: HARNESS_ALLOW_READ: \"~/.ssh/id_ed25519\" names no default deny-read pattern; the defaults are ~/.ssh, "},
		},
		{
			name: "policy with an unknown YAML key", code: cli.ExitUsage,
			args: func(l layout) []string {
				p := filepath.Join(l.base, "harness.yaml")
				require.NoError(t, os.WriteFile(p, []byte("moed: read-only\n"), 0o600))
				return ws(l, "policy", "--config", p)
			},
			stderrIn: []string{"moed"},
		},
		{
			name: "serve with an argument", code: cli.ExitUsage,
			args:     func(l layout) []string { return ws(l, "serve", "extra") },
			stderrIn: []string{"serve takes no arguments"},
		},
		{
			name: "an unknown command", code: cli.ExitUsage,
			args:     func(layout) []string { return []string{"frobnicate"} },
			stderrIn: []string{`harness: unknown command "frobnicate": the commands are serve, call, tools, policy, audit, history, undo, demo, version, help`},
		},
		{
			name: "an unknown command near a known one", code: cli.ExitUsage,
			args:     func(layout) []string { return []string{"polcy"} },
			stderrIn: []string{`harness: unknown command "polcy" (did you mean "policy"?)`, "Run 'harness help' for the commands."},
		},
		{
			name: "no command", code: cli.ExitUsage,
			args:     func(layout) []string { return nil },
			stderrIn: []string{"Usage:", "harness serve", "harness COMMAND --help"},
		},
		{
			name: "-h on a command is help on stdout", code: cli.ExitOK, golden: "help_policy",
			args: func(layout) []string { return []string{"policy", "-h"} },
		},
	}

	seen := map[string]bool{}
	for _, tc := range cases {
		require.False(t, seen[tc.name], "duplicate case %q", tc.name)
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t)
			args := tc.args(l)
			before := map[string]map[string]string{
				"ws": fixture.Snapshot(t, l.ws), "outside": fixture.Snapshot(t, l.outside), "tmp": fixture.Snapshot(t, l.tmp),
			}
			r := runCLI(t, args, tc.stdin, tc.terminal, tc.env)
			assert.EqualValues(t, tc.code, r.code, "exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			out := l.stable(r.stdout)
			switch {
			case tc.golden != "":
				golden(t, tc.golden, out)
			case tc.stdout == nil:
				assert.Empty(t, r.stdout)
			}
			if tc.stdout != nil {
				tc.stdout(t, l, r.stdout)
			}
			if tc.code == cli.ExitUsage {
				assert.Contains(t, r.stderr, "harness", "a usage error explains itself on stderr")
			}
			for _, s := range tc.stderrIn {
				assert.Contains(t, r.stderr, s)
			}
			for _, s := range tc.stderrNot {
				assert.NotContains(t, r.stderr, s)
			}
			if tc.code == cli.ExitOK && len(tc.stderrIn) == 0 && len(tc.stderrNot) == 0 {
				assert.Empty(t, r.stderr, "a successful run at the default log level is quiet")
			}
			if tc.disk != nil {
				tc.disk(t, l)
			} else {
				assert.Equal(t, before["ws"], fixture.Snapshot(t, l.ws), "the workspace is unchanged")
				assert.Equal(t, before["outside"], fixture.Snapshot(t, l.outside), "the outside directory is unchanged")
			}
			assert.Equal(t, before["tmp"], fixture.Snapshot(t, l.tmp), "the temp root is unchanged")
			assert.Empty(t, fixture.Residue(t, l.base))
		})
	}
}

// TestCallPrintsReadableText: call prints its JSON with HTML escaping off
// (writeJSON's SetEscapeHTML(false)), so the tool text's <path> tags should
// print as written. BUG: mcp.CallToolResult marshals itself with
// json.Marshal, which escapes them to \u003cpath\u003e before the encoder
// sees them.
func TestCallPrintsReadableText(t *testing.T) {
	l := newLayout(t)
	r := runCLI(t, []string{"call", "read", "--workspace", l.ws, "--arg", "file_path=a.txt"}, "", false, nil)
	require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"text": "<path>`+l.ws+`/a.txt</path>`)
	assert.NotContains(t, r.stdout, `\u003c`)
}

// TestRunWritesOnlyWhatItSays checks the whole disk of the mutating cases:
// a landed write adds exactly one file, nothing else.
func TestRunWritesOnlyWhatItSays(t *testing.T) {
	l := newLayout(t)
	before := fixture.Snapshot(t, l.base)
	r := runCLI(t, []string{"call", "write", "--workspace", l.ws, "--approval", "prompt", "--args", escalate}, "y\n", false, nil)
	require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
	after := fixture.Snapshot(t, l.base)
	added := map[string]string{}
	for k, v := range after {
		if before[k] != v {
			added[k] = v
		}
	}
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	assert.Equal(t, map[string]string{filepath.Join("ws", "b.txt"): (os.FileMode(0o666) &^ os.FileMode(mask)).String() + " escalated\n"}, added,
		"exactly one new file, with the new-file permission 0666 less the umask (spec difference 9)")
	for k := range before {
		assert.Contains(t, after, k, "nothing disappeared")
	}
}

func TestServe(t *testing.T) {
	l := newLayout(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	serverIn, clientOut := io.Pipe() // the client writes the server's stdin
	clientIn, serverOut := io.Pipe() // the server writes the client's stdout
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		code := cli.Run(ctx, []string{"serve", "--workspace", l.ws, "--mode", "workspace-write", "--temp-root", l.tmp}, cli.Env{
			Stdin: serverIn, Stdout: serverOut, Stderr: &stderr, Getenv: getenv(nil),
		})
		_ = serverOut.Close()
		done <- code
	}()

	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)

	init := cs.InitializeResult()
	require.NotNil(t, init)
	assert.Equal(t, mcpserver.Name, init.ServerInfo.Name)

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	names := make([]string, 0, len(list.Tools))
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"delete", "edit", "exec", "exec_input", "exec_kill", "exec_output", "glob", "grep", "list", "mkdir", "move", "read", "write"}, names)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"file_path": "a.txt"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Len(t, res.Content, 1)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "1: hello\n2: world")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"file_path": "missing.txt"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.EqualValues(t, "FS_NOT_FOUND", res.Meta[mcpserver.CodeMetaKey])

	// One session per connection: the read authorizes the edit.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "edit", Arguments: map[string]any{
		"file_path": "a.txt", "old_string": "world", "new_string": "there",
	}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	b, err := os.ReadFile(filepath.Join(l.ws, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello\nthere\n", string(b))

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{
		"file_path": filepath.Join(l.outside, "escape.txt"), "content": "x",
	}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.EqualValues(t, "FS_SANDBOX_DENIED", res.Meta[mcpserver.CodeMetaKey])
	assert.NoFileExists(t, filepath.Join(l.outside, "escape.txt"))

	require.NoError(t, cs.Close())
	select {
	case code := <-done:
		assert.EqualValues(t, cli.ExitOK, code, "stderr:\n%s", stderr.String())
	case <-ctx.Done():
		t.Fatalf("serve did not return after the client closed; stderr:\n%s", stderr.String())
	}
	assert.NotContains(t, stderr.String(), "harness:", "serve reported an error")
}

func TestServeEndsWithContext(t *testing.T) {
	l := newLayout(t)
	ctx, cancel := context.WithCancel(context.Background())
	serverIn, clientOut := io.Pipe()
	defer clientOut.Close() //nolint:errcheck // test pipe
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"serve", "--workspace", l.ws}, cli.Env{
			Stdin: serverIn, Stdout: io.Discard, Stderr: io.Discard, Getenv: getenv(nil),
		})
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		assert.EqualValues(t, cli.ExitOK, code, "a cancelled serve is a clean shutdown")
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after its context was cancelled")
	}
}

// TestReferenceCurrent: docs/reference.md is what `harness help --markdown`
// prints (-update rewrites it), and it names every command of the overview,
// every flag of every command's help and every tool `harness tools`
// declares.
func TestReferenceCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "docs", "reference.md")
	ref := runCLI(t, []string{"help", "--markdown"}, "", false, nil)
	require.EqualValues(t, cli.ExitOK, ref.code, ref.stderr)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(ref.stdout), 0o644))
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, ref.stdout, string(b), "docs/reference.md is stale: go test ./cmd/harness/internal/cli -run TestReferenceCurrent -update")

	overview := runCLI(t, []string{"help"}, "", false, nil)
	require.EqualValues(t, cli.ExitOK, overview.code)
	commands := regexp.MustCompile(`(?m)^  harness (\S+) `).FindAllStringSubmatch(overview.stdout, -1)
	require.Len(t, commands, 10)
	flagRE := regexp.MustCompile(`(?m)^  --([a-z-]+)`)
	for _, c := range commands {
		assert.Contains(t, ref.stdout, "\n### harness "+c[1]+"\n", "the reference has a section for %s", c[1])
		h := runCLI(t, []string{"help", c[1]}, "", false, nil)
		require.EqualValues(t, cli.ExitOK, h.code, h.stderr)
		for _, f := range flagRE.FindAllStringSubmatch(h.stdout, -1) {
			assert.Regexp(t, regexp.MustCompile("\\| `--"+regexp.QuoteMeta(f[1])+"[ `]"), ref.stdout,
				"the reference has a row for %s's flag --%s", c[1], f[1])
		}
	}
	l := newLayout(t)
	tools := runCLI(t, []string{"tools", "--workspace", l.ws}, "", false, nil)
	require.EqualValues(t, cli.ExitOK, tools.code)
	var decls []struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(tools.stdout), &decls))
	require.NotEmpty(t, decls)
	for _, d := range decls {
		assert.Contains(t, ref.stdout, "\n### "+d.Name+"\n", "the reference has a section for the %s tool", d.Name)
	}
}

// TestREADMEFrontDoor keeps the README a front door: at most 150 lines; its
// first screen names every tool and has exactly the two set-up commands;
// every page it links exists. docs/configuration.md, which explains the
// flags in depth, names every flag and every default host-run file.
func TestREADMEFrontDoor(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	readme := string(b)
	assert.LessOrEqual(t, strings.Count(readme, "\n"), 150, "the README is a front door, not the manual")

	l := newLayout(t)
	tools := runCLI(t, []string{"tools", "--workspace", l.ws}, "", false, nil)
	require.EqualValues(t, cli.ExitOK, tools.code)
	var decls []struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(tools.stdout), &decls))
	require.NotEmpty(t, decls)
	intro, _, _ := strings.Cut(readme, "\n## ")
	serveHelp := runCLI(t, []string{"help", "serve"}, "", false, nil)
	about, _, _ := strings.Cut(serveHelp.stdout, "\nExamples:")
	for _, d := range decls {
		assert.Contains(t, intro, "`"+d.Name+"`", "the README's first lines name the %s tool", d.Name)
		assert.Regexp(t, `\b`+d.Name+`\b`, about, "serve's help names the %s tool", d.Name)
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(intro)
	require.NotNil(t, block, "the first screen has a set-up block")
	assert.Equal(t, []string{"make demo", "make test"},
		regexp.MustCompile(`(?m)^(make \w+)`).FindAllString(block[1], -1), "exactly two set-up commands")

	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`).FindAllStringSubmatch(readme, -1) {
		assert.FileExists(t, filepath.Join(root, m[1]), "the README links %s", m[1])
	}

	c, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	require.NoError(t, err)
	conf := string(c)
	flagRE := regexp.MustCompile(`(?m)^  --([a-z-]+)`)
	for _, cmd := range []string{"serve", "call", "policy", "audit", "history", "undo"} {
		h := runCLI(t, []string{"help", cmd}, "", false, nil)
		require.EqualValues(t, cli.ExitOK, h.code, h.stderr)
		for _, f := range flagRE.FindAllStringSubmatch(h.stdout, -1) {
			assert.Regexp(t, regexp.MustCompile(`--`+regexp.QuoteMeta(f[1])+`([^a-z-]|$)`), conf,
				"docs/configuration.md explains %s's flag --%s", cmd, f[1])
		}
	}
	for _, h := range sandbox.HostRunFiles() {
		name := h.Name
		if h.Dir {
			name += "/"
		}
		assert.Contains(t, conf, "`"+name+"`", "docs/configuration.md's --protect row names the host-run file %s", name)
	}
}

// TestCallFromSlash (issue 12): `cd / && harness call write --args
// '{"file_path":"/opt/x",...}' --mode workspace-write` is refused (no
// workspace is set) and creates nothing; an explicit --workspace / is a
// start error that points to danger-full-access.
func TestCallFromSlash(t *testing.T) {
	target := "/opt/harness-call-from-slash.txt"
	_, err := os.Lstat(target)
	require.ErrorIs(t, err, os.ErrNotExist)
	t.Chdir("/")
	r := runCLI(t, []string{"call", "write", "--args", `{"file_path":"` + target + `","content":"x"}`, "--mode", "workspace-write"}, "", false, nil)
	assert.EqualValues(t, cli.ExitToolError, r.code, r.stderr)
	assert.Contains(t, r.stdout, "FS_SANDBOX_DENIED")
	assert.Contains(t, r.stdout, "no workspace is set")
	_, err = os.Lstat(target)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was created")

	r = runCLI(t, []string{"call", "write", "--args", `{"file_path":"` + target + `","content":"x"}`, "--mode", "workspace-write", "--workspace", "/"}, "", false, nil)
	assert.EqualValues(t, cli.ExitUsage, r.code)
	assert.Equal(t, "harness: --workspace \"/\" is the whole filesystem (/): under workspace-write it would allow writes anywhere; give a project directory, or use --mode danger-full-access to write anywhere\n", r.stderr)
	_, err = os.Lstat(target)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestStartFailureIsItsRootCause: a configuration the graph refuses while
// it is built is reported as its root cause on one line; the dependency
// wiring's account (which function, which file) only at --log-level debug.
func TestStartFailureIsItsRootCause(t *testing.T) {
	l := newLayout(t)
	slash := filepath.Join(t.TempDir(), "slash")
	require.NoError(t, os.Symlink("/", slash))
	args := []string{"policy", "--mode", "workspace-write", "--workspace", l.ws, "--writable-root", slash}
	r := runCLI(t, args, "", false, nil)
	assert.EqualValues(t, cli.ExitUsage, r.code)
	assert.Equal(t, "harness: sandboxpolicy: WritableRoots entry \""+slash+"\" resolves to \"/\", which would allow writes anywhere; use mode danger-full-access for that\n", r.stderr)

	r = runCLI(t, append(args, "--log-level", "debug"), "", false, nil)
	assert.EqualValues(t, cli.ExitUsage, r.code)
	assert.Contains(t, r.stderr, "the application did not start")
	assert.Contains(t, r.stderr, "could not build arguments for function", "the detail is kept at debug")
}

// TestPolicyFromSlash: `harness policy` run from / says no workspace is set.
func TestPolicyFromSlash(t *testing.T) {
	t.Chdir("/")
	r := runCLI(t, []string{"policy", "--mode", "workspace-write", "--temp-root", t.TempDir()}, "", false, nil)
	require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "workspace root: none (no workspace is set: the working directory is /)\n")
	assert.NotContains(t, r.stdout, "  /\n", "/ is never a writable root")
}

package toolexec

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
)

// Codes of exec results that are not the runner's own.
const (
	// CodeInvalidArgument marks an argument refused before anything ran.
	CodeInvalidArgument = "INVALID_ARGUMENT"
	// CodeTimedOut marks a command killed at its timeout.
	CodeTimedOut = "EXEC_TIMED_OUT"
	// CodeCancelled marks a command killed because the call was cancelled.
	CodeCancelled = "EXEC_CANCELLED"
)

// Value is the structured result of exec.
type Value struct {
	ExitCode        int    `json:"exit_code" jsonschema:"the shell's exit code; -1 when a signal ended it"`
	Signal          string `json:"signal" jsonschema:"the signal that ended the command, e.g. SIGKILL; empty when it exited"`
	TimedOut        bool   `json:"timed_out" jsonschema:"the timeout passed and the process tree was killed"`
	DurationMs      int64  `json:"duration_ms" jsonschema:"wall time in milliseconds"`
	Workdir         string `json:"workdir" jsonschema:"the directory the command ran in"`
	Stdout          string `json:"stdout" jsonschema:"standard output; when cut, its head, a [... N bytes cut ...] line and its tail"`
	Stderr          string `json:"stderr" jsonschema:"standard error, cut like stdout"`
	StdoutTruncated bool   `json:"stdout_truncated" jsonschema:"stdout was cut"`
	StderrTruncated bool   `json:"stderr_truncated" jsonschema:"stderr was cut"`
}

// Exec returns the exec tool. It is exclusive (it may mutate anything the
// policy allows).
func (t *Tool) Exec() *tool.Tool {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"command":    {Type: "string", Description: "Shell command line, run by /bin/sh -c."},
		"workdir":    {Type: "string", Description: "Directory to run in, beneath the workspace; relative to the workspace root. Default: the workspace root."},
		"timeout_ms": {Type: "number", Description: "Timeout in milliseconds (default 120000, at most 600000); the whole process tree is killed when it passes."},
	}, PropertyOrder: []string{"command", "workdir", "timeout_ms"}, Required: []string{"command"}}
	if t.deps.Runner.Confines() {
		targets := make([]any, 0, 2)
		for _, m := range sandboxpolicy.EscalationTargets() {
			targets = append(targets, string(m))
		}
		s.Properties["sandbox_permissions"] = &jsonschema.Schema{
			Type: "string", Enum: targets,
			Description: "Ask the user to run exactly this command once under a wider sandbox mode. Use only after a sandbox denial, with the narrowest wider mode that suffices.",
		}
		s.Properties["justification"] = &jsonschema.Schema{Type: "string", Description: "One sentence telling the user why this command needs the wider mode. Required with sandbox_permissions."}
		s.PropertyOrder = append(s.PropertyOrder, "sandbox_permissions", "justification")
	}
	out, err := jsonschema.For[Value](nil)
	if err != nil {
		panic("toolexec: output schema: " + err.Error()) // fixed at compile time
	}
	desc := "Run a shell command in the workspace and return its exit code, output and duration."
	if t.deps.Runner.Confines() {
		desc += " The command is confined by the sandbox mode: writes outside the writable roots and, unless allowed, network access fail."
	}
	return &tool.Tool{
		Name: "exec", Description: desc, InputSchema: s, OutputSchema: out,
		Annotations: tool.Annotations{Destructive: true},
		Exclusive:   true,
		Handler:     t.run,
	}
}

// call is one exec call's checked arguments.
type call struct {
	command, workdir       string
	timeout                time.Duration
	permission, justifying string
}

func (t *Tool) run(ctx context.Context, c tool.Call) tool.Result {
	args, err := t.parse(c.Arguments)
	if err != nil {
		return tool.ErrorResult(err.Error(), CodeInvalidArgument)
	}
	standing := t.deps.Policy.Resolve(c.Session, "")
	workdir, err := workdirOf(standing.WorkspaceRoot, args.workdir)
	if err != nil {
		return tool.ErrorResult(err.Error(), CodeInvalidArgument)
	}
	req := exec.Request{Command: args.command, Workdir: workdir, Timeout: args.timeout}
	policy := standing
	if t.deps.Runner.Confines() {
		if args.permission != "" {
			granted, err := sandboxpolicy.Escalate(ctx, t.deps.Approver, sandboxpolicy.ApprovalRequest{
				Session: c.Session, Tool: "exec", Mode: sandbox.Mode(args.permission),
				Justification: args.justifying, Command: args.command, Workdir: workdir,
			}, sandbox.SubjectCommand, standing.Mode)
			if err != nil {
				code := ""
				var ee *sandboxpolicy.EscalationError
				if errors.As(err, &ee) {
					code = ee.Code
				}
				return tool.ErrorResult(err.Error(), code)
			}
			policy = t.deps.Policy.Resolve(c.Session, granted)
		}
		req.Policy = &policy
	}
	select {
	case t.slots <- struct{}{}:
		defer func() { <-t.slots }()
	case <-ctx.Done():
		return tool.ErrorResult("the call was cancelled while waiting for a free command slot", CodeCancelled)
	}
	res, err := t.deps.Runner.Run(ctx, req)
	if err != nil {
		return failure(err)
	}
	t.log.Debug("exec", zap.String("workdir", workdir), zap.Int("exit", res.ExitCode), zap.Duration("duration", res.Duration))
	return t.render(req, res)
}

// failure renders a runner error with its code.
func failure(err error) tool.Result {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return tool.ErrorResult(ee.Message, string(ee.Code))
	}
	return tool.ErrorResult(err.Error(), "")
}

// render turns a finished command into the result: a timeout or a
// cancellation is an error result; a failure whose stderr shows a refusal on
// a path the policy forbids gets the denial marker and the escalation hint;
// any other exit, zero or not, is a plain result.
func (t *Tool) render(req exec.Request, res exec.Result) tool.Result {
	v := Value{
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, DurationMs: res.Duration.Milliseconds(),
		Workdir: req.Workdir, Stdout: res.Stdout.Text, Stderr: res.Stderr.Text,
		StdoutTruncated: res.Stdout.Truncated, StderrTruncated: res.Stderr.Truncated,
	}
	var b strings.Builder
	switch {
	case res.TimedOut:
		b.WriteString("timed out after " + strconv.FormatInt(req.Timeout.Milliseconds(), 10) + " ms; the command and all its processes were killed")
	case res.Cancelled:
		b.WriteString("cancelled; the command and all its processes were killed")
	case res.Signal != "":
		b.WriteString("killed by " + res.Signal)
	default:
		b.WriteString("exit code " + strconv.Itoa(res.ExitCode))
	}
	b.WriteString(" (" + strconv.FormatInt(v.DurationMs, 10) + " ms)\n<stdout>\n" + block(v.Stdout) + "</stdout>\n<stderr>\n" + block(v.Stderr) + "</stderr>")
	text := b.String()
	switch {
	case res.TimedOut:
		r := tool.ErrorResult(text, CodeTimedOut)
		r.Value = v
		return r
	case res.Cancelled:
		r := tool.ErrorResult(text, CodeCancelled)
		r.Value = v
		return r
	}
	if req.Policy != nil && res.ExitCode != 0 {
		if d, ok := t.inferDenial(*req.Policy, req.Workdir, res.Stderr.Text); ok {
			r := tool.ErrorResult(sandbox.DenialMarker(req.Policy.Mode)+"\n"+
				"(inferred: the command failed and its stderr reports "+strconv.Quote(d.refusal)+" on "+strconv.Quote(d.path)+
				", which "+string(req.Policy.Mode)+" does not allow writing)\n"+
				sandbox.EscalationHint(sandbox.SubjectCommand)+"\n"+text, string(fs.CodeSandboxDenied))
			r.Value = v
			return r
		}
	}
	return tool.Result{Text: text, Value: v}
}

// block returns s ending in exactly one newline, or "" when s is empty.
func block(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// workdirOf resolves the workdir argument against the workspace root: it
// must exist, be a directory and, canonical, lie beneath the canonical root.
func workdirOf(root, arg string) (string, error) {
	canonRoot := sandboxpolicy.CanonicalPath(root)
	dir := canonRoot
	if arg != "" {
		p := arg
		if !filepath.IsAbs(p) {
			p = filepath.Join(canonRoot, p)
		}
		dir = filepath.Clean(sandboxpolicy.CanonicalPath(p))
		if !dirfd.Beneath(canonRoot, dir) {
			return "", errors.New("workdir " + strconv.Quote(arg) + " is not beneath the workspace " + strconv.Quote(root))
		}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", errors.New("workdir " + strconv.Quote(dir) + " is not an existing directory")
	}
	return dir, nil
}

// parse checks the arguments.
func (t *Tool) parse(raw json.RawMessage) (call, error) {
	var a map[string]json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &a); err != nil {
			return call{}, errors.New("tool arguments must be a JSON object")
		}
	}
	present := func(n string) bool { v, ok := a[n]; return ok && string(v) != "null" }
	str := func(n string) (string, error) {
		if !present(n) {
			return "", nil
		}
		var s string
		if json.Unmarshal(a[n], &s) != nil {
			return "", errors.New(n + " must be a string")
		}
		return s, nil
	}
	var c call
	var err error
	if c.command, err = str("command"); err != nil {
		return c, err
	}
	if strings.TrimSpace(c.command) == "" {
		return c, errors.New("command must be a non-empty string")
	}
	if c.workdir, err = str("workdir"); err != nil {
		return c, err
	}
	c.timeout = DefaultTimeout
	if present("timeout_ms") {
		var f float64
		if json.Unmarshal(a["timeout_ms"], &f) != nil || f < 1 || f != math.Trunc(f) {
			return c, errors.New("timeout_ms must be a positive integer")
		}
		if f > float64(MaxTimeout.Milliseconds()) {
			return c, errors.New("timeout_ms must be at most " + strconv.FormatInt(MaxTimeout.Milliseconds(), 10))
		}
		c.timeout = time.Duration(f) * time.Millisecond
	}
	if c.permission, err = str("sandbox_permissions"); err != nil {
		return c, err
	}
	if c.justifying, err = str("justification"); err != nil {
		return c, err
	}
	if !t.deps.Runner.Confines() {
		if c.permission != "" || c.justifying != "" {
			return c, errors.New("sandbox_permissions is not available in this composition (the command runner does not confine)")
		}
		return c, nil
	}
	return c, sandboxpolicy.CheckEscalationArgs(c.permission, c.justifying)
}

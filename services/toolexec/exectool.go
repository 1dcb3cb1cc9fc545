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
	"github.com/dsh-go/harness/internal/fairshare"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
)

// Codes of exec results that are not the runner's own.
const (
	// CodeTimedOut marks a command killed at its timeout.
	CodeTimedOut errcode.Code = "EXEC_TIMED_OUT"
	// CodeCancelled marks a command killed because the call was cancelled.
	CodeCancelled errcode.Code = "EXEC_CANCELLED"
)

// Value is the structured result of exec.
type Value struct {
	ExitCode        int    `json:"exit_code" jsonschema:"the shell's exit code; -1 when a signal ended it"`
	Signal          string `json:"signal" jsonschema:"the signal that ended the command, e.g. SIGKILL; empty when it exited"`
	TimedOut        bool   `json:"timed_out" jsonschema:"the timeout passed and the process tree was killed (or it passed while the sandbox was being made: nothing ran)"`
	DurationMs      int64  `json:"duration_ms" jsonschema:"wall time in milliseconds"`
	Workdir         string `json:"workdir" jsonschema:"the directory the command ran in"`
	Stdout          string `json:"stdout" jsonschema:"standard output; when cut, its head, a [... N bytes cut ...] line and its tail"`
	Stderr          string `json:"stderr" jsonschema:"standard error, cut like stdout"`
	StdoutTruncated bool   `json:"stdout_truncated" jsonschema:"stdout was cut"`
	StderrTruncated bool   `json:"stderr_truncated" jsonschema:"stderr was cut"`
}

// Exec returns the exec tool, guarded (services/guard): its arguments are
// decoded strictly, and under a confining runner it takes
// sandbox_permissions and justification, asked through the call's own
// approver.
func (t *Tool) Exec() *tool.Tool {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"command": {Type: "string", Description: "Shell command line, run by /bin/sh -c."},
		"workdir": {Type: "string", Description: "Directory to run in, beneath the workspace; relative to the workspace root. Default: the workspace root."},
		"timeout_ms": {
			Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(MaxTimeout.Milliseconds())),
			Description: "Timeout in milliseconds (default 120000, at most 600000; a background command has none unless given); the whole process tree is killed when it passes.",
		},
		"background": {
			Type: "boolean",
			Description: "Start the command in the background (a dev server, a watcher) and return its id at once; read its output with exec_output, end it with exec_kill. " +
				"It runs until it exits, is killed, or the session ends; at most " + strconv.Itoa(MaxBackground) + " at once per session.",
		},
		"interactive": {
			Type: "boolean",
			Description: "Keep the command's standard input open (a REPL, a prompting installer): it runs as a background command; exec returns its output once it ends, " +
				"goes quiet or wait_ms passes, with its id; type to it with exec_input. It ends when it exits, is killed, the session ends, or it has had no input for the idle limit.",
		},
		"tty": {
			Type: "boolean",
			Description: "Like interactive, on a terminal of its own (isatty true; stdout and stderr are one stream, returned as stdout with terminal control sequences removed, \\r\\n as \\n). " +
				"For programs that need one: a REPL's line editing, a password prompt, Ctrl-C as an interrupt.",
		},
		"rows": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(maxTermSize)), Description: "With tty: the terminal's rows (default 24)."},
		"cols": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(maxTermSize)), Description: "With tty: the terminal's columns (default 80)."},
		"wait_ms": {
			Type: "integer", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(float64(MaxWait.Milliseconds())),
			Description: "With interactive or tty: how long exec waits for output before returning (default " + strconv.FormatInt(DefaultWait.Milliseconds(), 10) +
				"); it returns sooner when the command ends or, once it printed something, its output has been quiet for " + strconv.FormatInt(quiet.Milliseconds(), 10) + " ms.",
		},
	}, PropertyOrder: []string{"command", "workdir", "timeout_ms", "background", "interactive", "tty", "rows", "cols", "wait_ms"}, Required: []string{"command"}}
	desc := "Run a shell command in the workspace and return its exit code, output and duration; with background, start it and return its id; " +
		"with interactive or tty, start it with its input open (on a terminal of its own with tty) and return its first output and its id, for exec_input."
	if t.g.Confines() {
		desc += " The command is confined by the sandbox mode: writes outside the writable roots and, unless allowed, network access fail;" +
			" in every mode, credentials the deny-read set names are hidden (a denied directory is empty, a denied file unreadable)."
	}
	return t.g.Tool(tool.Tool{
		Name: "exec", Description: desc, InputSchema: s, OutputSchema: execOutputSchema(),
		Annotations: tool.Annotations{Destructive: true},
	}, true, t.run)
}

// execOutputSchema is exec's output schema: Value's properties for a command
// run to its end, and Started's for one started in the background; so none
// is required.
func execOutputSchema() *jsonschema.Schema {
	out, err := jsonschema.For[Value](nil)
	if err != nil {
		panic("toolexec: output schema: " + err.Error()) // fixed at compile time
	}
	bg, err := jsonschema.For[Started](nil)
	if err != nil {
		panic("toolexec: output schema: " + err.Error()) // fixed at compile time
	}
	for name, p := range bg.Properties {
		if _, ok := out.Properties[name]; !ok {
			out.Properties[name] = p
		}
	}
	out.Required = nil
	return out
}

// call is one exec call's checked arguments.
type call struct {
	command, workdir string
	timeout          time.Duration
	timeoutSet       bool
	background       bool
	// interactive and tty: an interactive command (issue 38), on a
	// terminal of size with tty; wait is how long exec waits for its
	// first output.
	interactive, tty bool
	rows, cols       uint16
	wait             time.Duration
	esc              guard.Escalation
}

func (t *Tool) run(ctx context.Context, c *guard.Call) tool.Result {
	args, err := parse(c)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	recordCommand(ctx, args)
	workspace := c.Workspace()
	workdir, err := workdirOf(workspace, args.workdir)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	recordWorkdir(ctx, workdir)
	req := exec.Request{Command: args.command, Workdir: workdir, Timeout: args.timeout}
	if standing := c.Standing(); standing != nil {
		policy := *standing
		if len(args.esc.Hosts) > 0 {
			before, err := os.Stat(workdir)
			if err != nil {
				return t.g.Fail(guard.BadArg("workdir "+strconv.Quote(workdir)+" is not an existing directory"), standing)
			}
			forSession, err := c.EscalateHosts(ctx, args.esc, sandbox.ApprovalRequest{Command: args.command, Workdir: workdir})
			if err != nil {
				return t.g.Fail(err, standing)
			}
			if err := sameWorkdir(workspace, args.workdir, workdir, before); err != nil {
				return t.g.Fail(sandboxpolicy.WorkdirChanged(policy.Mode, workdir, err.Error()), standing)
			}
			if !forSession {
				// Once: this command only (a session grant is the
				// session's, read by the runner).
				req.AllowHosts = args.esc.Hosts
			}
		}
		if args.esc.Mode != "" {
			before, err := os.Stat(workdir)
			if err != nil {
				return t.g.Fail(guard.BadArg("workdir "+strconv.Quote(workdir)+" is not an existing directory"), standing)
			}
			ask := sandbox.ApprovalRequest{Command: args.command, Workdir: workdir}
			// The mode already held is allowed without asking (guard's
			// Escalate), so it lifts no deny-read path either.
			held := args.esc.Mode == policy.Mode
			if args.esc.Mode == sandbox.DangerFullAccess && !held {
				ask.Reads = t.readTargets(args.command, workdir, commandHome(policy.WorkspaceRoot))
			}
			if policy, err = c.Escalate(ctx, policy, args.esc, ask); err != nil {
				return t.g.Fail(err, standing)
			}
			// An approval given once makes exactly the deny-read paths its
			// prompt named readable to this command; every other path
			// stays masked, and a session grant lifts nothing (issue 24).
			if policy.Mode == sandbox.DangerFullAccess && !policy.SessionGrant && !held {
				req.LiftedReads = sandboxpolicy.NamedReads(ask.Reads)
			}
			// The user approved this command in the directory shown:
			// after the wait, it must still be that directory (issue 21).
			if err := sameWorkdir(workspace, args.workdir, workdir, before); err != nil {
				return t.g.Fail(sandboxpolicy.WorkdirChanged(policy.Mode, workdir, err.Error()), standing)
			}
		}
		req.Policy = &policy
	}
	if args.interactive {
		if !args.timeoutSet {
			req.Timeout = 0
		}
		return t.startInteractive(ctx, c, workspace, req, args)
	}
	if args.background {
		if !args.timeoutSet {
			req.Timeout = 0
		}
		return t.startBackground(ctx, c, workspace, req)
	}
	res, ran, err := t.runNow(ctx, c, workspace, req)
	if !ran {
		return tool.ErrorResult("the call was cancelled while waiting for a free command slot", CodeCancelled)
	}
	if lim, ok := errors.AsType[*principalLimitError](err); ok {
		return tool.ErrorResult(lim.Error(), CodePrincipalLimit)
	}
	if err != nil {
		return t.g.Fail(err, req.Policy)
	}
	t.log.Debug("exec", zap.String("workdir", workdir), zap.Int("exit", res.ExitCode), zap.Duration("duration", res.Duration))
	r := t.render(req, res)
	recordRun(ctx, res, t.allowedHosts(c.Session, req), r.Marker)
	return r
}

// runNow runs req in one of the command slots, waiting for one first (its
// principal's turn, under Config.PrincipalMaxConcurrent), and
// reports its progress to the call's Progress every ProgressEvery. The wait
// and the run happen through the call's Idle: they hold a command slot, not
// the front end's call slot (the command slots are the commands' own cap),
// so other calls never queue behind commands. ran is false when ctx ended
// before a slot was free (nothing ran); err is a *principalLimitError when
// the command would pass its principal's caps in all (nothing ran). With --journal-commands, the
// workspace is snapshotted right before the command and what it changed
// journaled right after it ended, however it ended.
func (t *Tool) runNow(ctx context.Context, c *guard.Call, workspace string, req exec.Request) (res exec.Result, ran bool, err error) {
	rep := report(c.Progress, func() int { return t.slots.Waiting(c.Principal) })
	defer rep.stop()
	if c.Progress != nil {
		req.Stdout, req.Stderr = &rep.out, &rep.out
	}
	idle(ctx, c, func() {
		ticket := fairshare.Ticket{Key: c.Principal, Cap: t.cfg.PrincipalMaxConcurrent}
		if c.Session != nil {
			ticket.Sub = c.Session.ID()
		}
		waited := time.Now()
		hold, herr := t.slots.Acquire(ctx, ticket)
		if t.deps.Metrics != nil {
			t.deps.Metrics.SlotWait("command", c.Principal, time.Since(waited))
		}
		if herr != nil {
			return // ctx ended: nothing ran
		}
		defer hold.Release()
		ran = true
		done, berr := t.budgets.take(c.Principal, false)
		if berr != nil {
			err = berr
			return
		}
		defer done()
		snap := t.snapshot(ctx, workspace, req)
		rep.running.Store(true)
		res, err = t.deps.Runner.Run(ctx, req)
		t.journal(context.WithoutCancel(ctx), snap, audit.FromContext(ctx).Record())
	})
	return res, ran, err
}

// render turns a finished command into the result: a timeout or a
// cancellation is an error result; a command that left git state running
// a program, which the runner disarmed (exec.Confinement.Disarmed), is the
// guard's denial naming each, whatever its exit; a confined command's failure whose stderr
// shows the deny-read masks refusing a read (inferReadDenial) or the
// sandbox refusing a write (inferFileDenial) is the guard's denial (marker,
// the inference, the escalation hint); else, while the domain proxy
// refused it hosts (its record), the guard's network denial naming them
// (DeniedHosts); else one whose stderr shows the network refused
// (inferNetworkDenial) is the guard's network denial; any other exit,
// zero or not, is a plain result, which for a confined command that
// failed making a user namespace begins with a note saying so (usernsNote).
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
	if res.ExitCode != 0 {
		if note, ok := wholeGitNote(res.Confinement, res.Stderr.Text); ok {
			text = note + "\n" + text
		}
	}
	if req.Policy != nil && res.Confinement != nil && len(res.Confinement.Disarmed) > 0 {
		r := t.g.Denied(*req.Policy, disarmedDetail(res.Confinement.Disarmed), text)
		r.Value = v
		return r
	}
	if req.Policy != nil && res.Confinement != nil && res.ExitCode != 0 {
		// A refusal the output names a path for comes first: a command
		// whose program also tried the network in passing (npm's update
		// check) failed on the path.
		if d, ok := t.inferReadDenial(res.Confinement, req, res.Stderr.Text); ok {
			r := t.g.DeniedRead(*req.Policy, d.detail(), text, true)
			r.Value = v
			return r
		}
		if d, ok := t.inferFileDenial(*req.Policy, res.Confinement, req, res.Stderr.Text); ok {
			r := t.g.Denied(*req.Policy, d.detail(), text)
			r.Value = v
			return r
		}
		if len(res.Confinement.Refused) > 0 {
			r := t.g.DeniedHosts(*req.Policy, res.Confinement.Refused, res.Confinement.RefusedMore, text)
			r.Value = v
			return r
		}
		if detail, ok := inferNetworkDenial(res.Confinement, res.Stderr.Text); ok {
			r := t.g.DeniedNetwork(*req.Policy, detail, text)
			r.Value = v
			return r
		}
	}
	if res.Confinement != nil && res.ExitCode != 0 {
		if note, ok := usernsNote(res.Stderr.Text); ok {
			text = note + "\n" + text
		}
	}
	return tool.Result{Text: text, Value: v}
}

// disarmedDetail is the denial's lines for what a command left that the
// host would act on, which the runner disarmed when it ended
// (exec.Confinement.Disarmed): the git state that would make git on the
// host run a program, then the entries put in place of protected links,
// each group under its own heading, one line each.
func disarmedDetail(ds []exec.DisarmedState) string {
	var b strings.Builder
	for _, group := range []struct {
		link    bool
		heading string
	}{
		{false, "the command left git state that would make git on the host run a program; it was disarmed when the command ended (run the program itself in a command instead):"},
		{true, "the command put its own entry in place of a protected link, which the host reads through; when it ended the entry was moved aside and the link made again:"},
	} {
		first := true
		for _, d := range ds {
			if d.Link != group.link {
				continue
			}
			if first {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(group.heading)
				first = false
			}
			if d.Path == "" {
				b.WriteString("\n  " + oneLine(d.Action))
				continue
			}
			b.WriteString("\n  " + strconv.Quote(d.Path) + ": " + d.Runs + " (" + strconv.Quote(d.Found) + "): " + oneLine(d.Action))
		}
	}
	return b.String()
}

// oneLine is s with each line break escaped (an action naming a path the
// command chose, which may hold one), so it stays the line it is on.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
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
// Errors: *guard.ArgError.
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
			return "", guard.BadArg("workdir " + strconv.Quote(arg) + " is not beneath the workspace " + strconv.Quote(root))
		}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", guard.BadArg("workdir " + strconv.Quote(dir) + " is not an existing directory")
	}
	return dir, nil
}

// sameWorkdir checks that the workdir argument arg still resolves to shown,
// the directory before (os.Stat) was: the same canonical path and the same
// directory (device and inode). The error says what it is now.
func sameWorkdir(workspace, arg, shown string, before os.FileInfo) error {
	now, err := workdirOf(workspace, arg)
	if err != nil {
		return err
	}
	if now != shown {
		return errors.New(strconv.Quote(now))
	}
	after, err := os.Stat(now)
	if err != nil || !os.SameFile(before, after) {
		return errors.New("another directory at " + strconv.Quote(now))
	}
	return nil
}

// parse checks the arguments. Errors: *guard.ArgError.
func parse(c *guard.Call) (call, error) {
	present := func(n string) bool { v, ok := c.Args[n]; return ok && string(v) != "null" }
	str := func(n string) (string, error) {
		if !present(n) {
			return "", nil
		}
		var s string
		if json.Unmarshal(c.Args[n], &s) != nil {
			return "", guard.BadArg(n + " must be a string")
		}
		return s, nil
	}
	var a call
	var err error
	if a.command, err = str("command"); err != nil {
		return a, err
	}
	if strings.TrimSpace(a.command) == "" {
		return a, guard.BadArg("command must be a non-empty string")
	}
	if a.workdir, err = str("workdir"); err != nil {
		return a, err
	}
	a.timeout = DefaultTimeout
	if present("timeout_ms") {
		var f float64
		if json.Unmarshal(c.Args["timeout_ms"], &f) != nil || f < 1 || f != math.Trunc(f) {
			return a, guard.BadArg("timeout_ms must be a positive integer")
		}
		if f > float64(MaxTimeout.Milliseconds()) {
			return a, guard.BadArg("timeout_ms must be at most " + strconv.FormatInt(MaxTimeout.Milliseconds(), 10))
		}
		a.timeout = time.Duration(f) * time.Millisecond
		a.timeoutSet = true
	}
	if err := boolArg(c, "background", &a.background); err != nil {
		return a, err
	}
	if err := parseInteractive(c, &a); err != nil {
		return a, err
	}
	a.esc, err = c.Escalation()
	return a, err
}

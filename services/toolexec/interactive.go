package toolexec

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/tool"
)

// Limits of interactive commands (issue 38).
const (
	// DefaultWait is how long exec waits for an interactive command's
	// output before returning; DefaultInputWait is exec_input's; MaxWait
	// bounds both.
	DefaultWait      = 2 * time.Second
	DefaultInputWait = time.Second
	MaxWait          = 30 * time.Second
	// MaxInput is how many bytes one exec_input may send.
	MaxInput = 64 << 10
	// quiet ends a wait once output came and then none for this long.
	quiet = 300 * time.Millisecond
	// inputTimeout bounds how long a write waits for the command to take
	// its input once it can.
	inputTimeout = 5 * time.Second
	// startWait bounds how long exec_input waits, before that, for a
	// command still starting (its sandbox being made: seconds on a loaded
	// machine or in a large tree) to be able to take input at all.
	startWait = 30 * time.Second
	// maxTermSize bounds a terminal's rows and columns.
	maxTermSize = 1000
)

// Codes of exec_input results.
const (
	// CodeNotInteractive: the background command was started without
	// interactive or tty, so nothing reads input from the server.
	CodeNotInteractive errcode.Code = "EXEC_NOT_INTERACTIVE"
	// CodeInputRefused: the input could not be sent (the command ended,
	// its input was closed, it did not read it in time); the result still
	// has its state and new output.
	CodeInputRefused errcode.Code = "EXEC_INPUT_REFUSED"
)

// parseInteractive reads exec's interactive, tty, rows, cols and wait_ms
// into a. Errors: *guard.ArgError for a wrong type or range, or rows and
// cols without tty.
func parseInteractive(c *guard.Call, a *call) error {
	if err := boolArg(c, "interactive", &a.interactive); err != nil {
		return err
	}
	if err := boolArg(c, "tty", &a.tty); err != nil {
		return err
	}
	a.interactive = a.interactive || a.tty
	rows, rowsSet, err := intArg(c, "rows", 1, maxTermSize)
	if err != nil {
		return err
	}
	cols, colsSet, err := intArg(c, "cols", 1, maxTermSize)
	if err != nil {
		return err
	}
	if (rowsSet || colsSet) && !a.tty {
		return guard.BadArg("rows and cols size a terminal: they need tty")
	}
	a.rows, a.cols = uint16(rows), uint16(cols) //nolint:gosec // bounded by maxTermSize
	wait, waitSet, err := intArg(c, "wait_ms", 0, int(MaxWait.Milliseconds()))
	if err != nil {
		return err
	}
	if waitSet && !a.interactive {
		return guard.BadArg("wait_ms is for interactive or tty commands")
	}
	a.wait = DefaultWait
	if waitSet {
		a.wait = time.Duration(wait) * time.Millisecond
	}
	if a.interactive && a.background {
		// Both mean "return while it runs"; interactive says more.
		a.background = false
	}
	return nil
}

// boolArg sets *v from the boolean argument name when present.
func boolArg(c *guard.Call, name string, v *bool) error {
	raw, ok := c.Args[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	if json.Unmarshal(raw, v) != nil {
		return guard.BadArg(name + " must be a boolean")
	}
	return nil
}

// intArg returns the integer argument name, ok false when absent.
// Errors: *guard.ArgError when it is not an integer in [lo, hi].
func intArg(c *guard.Call, name string, lo, hi int) (int, bool, error) {
	raw, ok := c.Args[name]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, false, guard.BadArg(name + " must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi))
	}
	return int(f), true, nil
}

// startInteractive starts req as an interactive background command (its
// stdin a pipe, or a terminal with args.tty), waits for its output as
// waitOutput does and returns what exec_output would: its state and
// output, with its id for exec_input.
func (t *Tool) startInteractive(ctx context.Context, c *guard.Call, workspace string, req exec.Request, args call) tool.Result {
	in, err := subproc.NewInput(args.tty, args.rows, args.cols)
	if err != nil {
		return t.g.Fail(err, req.Policy)
	}
	req.Input = in
	j, fail := t.launch(ctx, c, workspace, req)
	if fail != nil {
		in.Close()
		return *fail
	}
	t.await(ctx, c, j, args.wait)
	r := t.readJob(j)
	if j.state() == stateRunning {
		r.Text = "running as " + j.id + " (interactive" + map[bool]string{true: ", on a terminal", false: ""}[args.tty] +
			"): type to it with exec_input {\"id\":\"" + j.id + "\",\"input\":\"...\\n\"}, read it with exec_output, end it with exec_kill.\n" + r.Text
	}
	return r
}

// await waits, holding no call slot, until j ends, wait passes, or j's
// output has been quiet for quiet after some came.
func (t *Tool) await(ctx context.Context, c *guard.Call, j *job, wait time.Duration) {
	idle(ctx, c, func() { waitOutput(ctx, j, wait) })
}

// idle runs wait, a part of call c that only waits, holding no call slot
// (c.Idle); where the front end holds none (c.Idle nil), it just runs it.
func idle(ctx context.Context, c *guard.Call, wait func()) {
	if c.Idle == nil {
		wait()
		return
	}
	c.Idle(ctx, wait)
}

// waitOutput returns when j has ended, wait has passed, ctx is done, or
// output came and then none for quiet.
func waitOutput(ctx context.Context, j *job, wait time.Duration) {
	deadline := time.Now().Add(wait)
	seen := j.stdout.written() + j.stderr.written()
	start := seen
	last := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-j.done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n := j.stdout.written() + j.stderr.written(); n != seen {
			seen, last = n, time.Now()
		} else if seen != start && time.Since(last) >= quiet {
			return
		}
	}
}

// Input returns the exec_input tool: it types to an interactive command
// (its stdin, or its terminal), resizes its terminal or ends its input,
// then waits for the output that follows and returns it as exec_output
// does.
func (t *Tool) Input() *tool.Tool {
	in := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"id": {Type: "string", Description: "The interactive command's id (from exec with interactive or tty)."},
		"input": {
			Type: "string",
			Description: "What to type, as is: end a line with \\n; control characters work on a terminal (\\u0003 Ctrl-C, \\u0004 Ctrl-D, \\u001b[A up arrow). At most " +
				strconv.Itoa(MaxInput) + " bytes.",
		},
		"eof":  {Type: "boolean", Description: "After the input, end the input: closes stdin, or types Ctrl-D on a terminal."},
		"rows": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(maxTermSize)), Description: "Resize the terminal to this many rows (with cols)."},
		"cols": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(maxTermSize)), Description: "Resize the terminal to this many columns (with rows)."},
		"wait_ms": {
			Type: "integer", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(float64(MaxWait.Milliseconds())),
			Description: "How long to wait for the output that follows (default " + strconv.FormatInt(DefaultInputWait.Milliseconds(), 10) +
				"); it returns sooner when the command ends or, once it printed something, its output has been quiet for " + strconv.FormatInt(quiet.Milliseconds(), 10) + " ms.",
		},
	}, PropertyOrder: []string{"id", "input", "eof", "rows", "cols", "wait_ms"}, Required: []string{"id"}}
	return t.g.Tool(tool.Tool{
		Name: "exec_input",
		Description: "Type to an interactive command (started by exec with interactive or tty): send input to its stdin or terminal, optionally end its input or resize its terminal, " +
			"then wait for the output that follows and return it with the command's state, as exec_output does.",
		InputSchema: in, OutputSchema: outputSchema(),
		Annotations: tool.Annotations{Destructive: true},
	}, false, t.input)
}

// inputArgs are exec_input's checked arguments.
type inputArgs struct {
	id, input  string
	eof        bool
	resize     bool
	rows, cols uint16
	wait       time.Duration
}

func parseInput(c *guard.Call) (inputArgs, error) {
	var a inputArgs
	id, ok, err := optString(c, "id")
	if err == nil && (!ok || id == "") {
		err = guard.BadArg("id must be a non-empty string")
	}
	if err != nil {
		return a, err
	}
	a.id = id
	if a.input, _, err = optString(c, "input"); err != nil {
		return a, err
	}
	if len(a.input) > MaxInput {
		return a, guard.BadArg("input must be at most " + strconv.Itoa(MaxInput) + " bytes; send it in parts")
	}
	if err := boolArg(c, "eof", &a.eof); err != nil {
		return a, err
	}
	rows, rowsSet, err := intArg(c, "rows", 1, maxTermSize)
	if err != nil {
		return a, err
	}
	cols, colsSet, err := intArg(c, "cols", 1, maxTermSize)
	if err != nil {
		return a, err
	}
	if rowsSet != colsSet {
		return a, guard.BadArg("a resize needs both rows and cols")
	}
	if rowsSet {
		a.resize, a.rows, a.cols = true, uint16(rows), uint16(cols) //nolint:gosec // bounded by maxTermSize
	}
	wait, waitSet, err := intArg(c, "wait_ms", 0, int(MaxWait.Milliseconds()))
	if err != nil {
		return a, err
	}
	a.wait = DefaultInputWait
	if waitSet {
		a.wait = time.Duration(wait) * time.Millisecond
	}
	return a, nil
}

func (t *Tool) input(ctx context.Context, c *guard.Call) tool.Result {
	a, err := parseInput(c)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	j := t.jobs.find(c.Session, a.id)
	if j == nil {
		return unknownID(a.id)
	}
	recordInput(ctx, j, a.input)
	if j.input == nil {
		return tool.ErrorResult(j.id+" was not started with interactive or tty: nothing reads input from here (exec_output reads it, exec_kill ends it)", CodeNotInteractive)
	}
	if a.resize && !j.input.Terminal() {
		return tool.ErrorResult(j.id+" has no terminal to resize (start it with tty)", CodeNotInteractive)
	}
	j.lastInput.Store(time.Now().UnixNano())
	var sendErr error
	if a.resize || a.input != "" || a.eof {
		// A command still starting takes its input once it can; the call
		// waits for that holding no call slot, and gives up when the
		// client cancels it (nothing is sent then).
		sendErr = context.Canceled
		idle(ctx, c, func() { sendErr = j.input.Ready(ctx, startWait) })
		if ctx.Err() != nil {
			sendErr = ctx.Err()
		}
	}
	if sendErr == nil && a.resize {
		sendErr = j.input.Resize(a.rows, a.cols, inputTimeout)
	}
	if sendErr == nil && a.input != "" {
		var n int
		n, sendErr = j.input.Write([]byte(a.input), inputTimeout)
		if sendErr != nil && n > 0 {
			sendErr = errors.New(strconv.Itoa(n) + " of " + strconv.Itoa(len(a.input)) + " bytes were sent: " + sendErr.Error())
		}
	}
	if sendErr == nil && a.eof {
		sendErr = j.input.CloseInput(inputTimeout)
	}
	if sendErr == nil {
		t.await(ctx, c, j, a.wait)
	}
	r := t.readJob(j)
	if sendErr != nil {
		failed := tool.ErrorResult("the input was not sent: "+sendErr.Error()+"\n"+r.Text, CodeInputRefused)
		failed.Value = r.Value
		return failed
	}
	return r
}

// recordInput makes exec_input's audit record: the command it types to
// (its line, redacted and cut as exec's is) and what was typed, redacted
// the same way; while the terminal reads a line without echoing it (a
// password or a one-time code prompt: Input.Hidden), the first line typed
// is not recorded, only its length, and the rest is.
func recordInput(ctx context.Context, j *job, input string) {
	typed := commandLine(input)
	if input != "" && j.input != nil && j.input.Hidden() {
		first, rest, _ := strings.Cut(input, "\n")
		typed = "[" + strconv.Itoa(len(first)) + " bytes typed at a prompt that did not echo: not recorded]"
		if rest != "" {
			typed += "\n" + commandLine(rest)
		}
	}
	audit.FromContext(ctx).Update(func(r *audit.Record) {
		r.Command = &audit.Command{Line: commandLine(j.command), Workdir: j.workdir, Background: true, Input: typed, Journal: audit.NotJournaled}
	})
}

// runningDenial (X-11d) judges the output an interactive command wrote
// since the last read (its terminal's stream, or its stderr) as a finished
// command's is judged (render), whatever its state: a line showing the
// sandbox refusing a write, or the network, puts the guard's denial (its
// marker, the inference, the escalation hint) before the command's state
// and output. The result is not an error: the read worked, the command
// goes on (a REPL after a refused write), and which of its commands failed
// is the model's to judge, since a running terminal session has no exit
// code to tell a real refusal from one printed (a file shown). Read
// denials need the paths masked in the run's view, which only its end
// reports: not judged here.
func (t *Tool) runningDenial(j *job, v Output, text string) (tool.Result, bool) {
	if j.input == nil || j.conf == nil || j.req.Policy == nil {
		return tool.Result{}, false
	}
	out := v.Stderr
	if j.input.Terminal() {
		out = v.Stdout
	}
	if out == "" {
		return tool.Result{}, false
	}
	policy := *j.req.Policy
	var denial tool.Result
	if d, ok := t.inferFileDenial(policy, j.conf, j.req, out); ok {
		denial = t.g.Denied(policy, d.detail(), text)
	} else if detail, ok := inferNetworkDenial(j.conf, out); ok {
		denial = t.g.DeniedNetwork(policy, detail, text)
	} else {
		return tool.Result{}, false
	}
	return tool.Result{Text: strings.TrimPrefix(denial.Text, "Error: "), Value: v}, true
}

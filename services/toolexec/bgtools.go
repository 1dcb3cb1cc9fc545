package toolexec

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// Started is the structured result of exec with background: the command's
// id, for exec_output and exec_kill.
type Started struct {
	ID         string `json:"id" jsonschema:"the background command's id, for exec_output and exec_kill"`
	Command    string `json:"command" jsonschema:"the command line"`
	Background bool   `json:"background" jsonschema:"true: the command was started in the background"`
	Started    string `json:"started" jsonschema:"when it started, RFC 3339"`
}

// Job is one background command as exec_output and exec_kill report it.
type Job struct {
	ID         string `json:"id" jsonschema:"the command's id"`
	Command    string `json:"command" jsonschema:"the command line"`
	Workdir    string `json:"workdir" jsonschema:"the directory it runs in"`
	State      string `json:"state" jsonschema:"running; exited; killed (a signal or exec_kill ended it); timed_out; or failed (it could not start: error says why)"`
	ExitCode   *int   `json:"exit_code,omitempty" jsonschema:"the shell's exit code once it ended; -1 when a signal ended it"`
	Signal     string `json:"signal,omitempty" jsonschema:"the signal that ended it, e.g. SIGKILL, or the one exec_kill sent (a shell that outlives its killed program then exits with a code of its own, such as 143 for SIGTERM)"`
	Error      string `json:"error,omitempty" jsonschema:"why it could not start"`
	Input      string `json:"input,omitempty" jsonschema:"an interactive command's input, which exec_input types to: stdin (a pipe) or terminal; absent for another"`
	Idle       bool   `json:"idle_ended,omitempty" jsonschema:"true: an interactive command ended (state timed_out) because it had no input for the idle limit"`
	Started    string `json:"started" jsonschema:"when it started, RFC 3339"`
	DurationMs int64  `json:"duration_ms" jsonschema:"how long it has run, or ran, in milliseconds"`
	StdoutTail string `json:"stdout_tail,omitempty" jsonschema:"once it ended: the last 4 KiB (at most) of its standard output, read before or not"`
	StderrTail string `json:"stderr_tail,omitempty" jsonschema:"once it ended: the last 4 KiB (at most) of its standard error"`
}

// Output is the structured result of exec_kill, and of exec_output with
// an id: the command, its state and its output since the last read.
type Output struct {
	Job
	Stdout        string `json:"stdout,omitempty" jsonschema:"standard output written since the last read"`
	Stderr        string `json:"stderr,omitempty" jsonschema:"standard error written since the last read"`
	StdoutDropped int64  `json:"stdout_dropped,omitempty" jsonschema:"bytes of stdout written since the last read but dropped: only the last 1 MiB is kept"`
	StderrDropped int64  `json:"stderr_dropped,omitempty" jsonschema:"bytes of stderr dropped likewise"`
}

// Listing is the structured result of exec_output without an id: the
// session's background commands, running and ended (at most MaxEnded of
// those, the latest), oldest first.
type Listing struct {
	Commands []Job `json:"commands" jsonschema:"the session's background commands, oldest first: running ones, and the last ended ones with how they ended"`
}

// signals are the signals exec_kill sends, by name.
var signals = map[string]syscall.Signal{
	"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP, "SIGKILL": syscall.SIGKILL,
}

// startBackground starts req as a background command of the call's session
// and returns its id at once. A command that cannot start (the sandbox is
// unavailable, a protected workdir) shows as failed, with the reason, in
// exec_output. With --journal-commands the workspace is snapshotted before
// it starts and what it changed is journaled when it ends (exit, kill,
// timeout, the session's end), under this call's id.
func (t *Tool) startBackground(ctx context.Context, c *guard.Call, workspace string, req exec.Request) tool.Result {
	j, fail := t.launch(ctx, c, workspace, req)
	if fail != nil {
		return *fail
	}
	v := Started{ID: j.id, Command: j.command, Background: true, Started: j.started.UTC().Format(time.RFC3339Nano)}
	return tool.Result{Value: v, Text: "started in the background as " + j.id + " (in " + j.workdir + "); read its output with exec_output {\"id\":\"" +
		j.id + "\"}, end it with exec_kill {\"id\":\"" + j.id + "\"}. It ends with the session."}
}

// launch starts req as a background command of the call's session (see
// startBackground); fail is the result refusing it.
func (t *Tool) launch(ctx context.Context, c *guard.Call, workspace string, req exec.Request) (j *job, fail *tool.Result) {
	done, err := t.budgets.take(c.Principal, true)
	if err != nil {
		r := tool.ErrorResult(err.Error(), CodePrincipalLimit)
		return nil, &r
	}
	snap := t.snapshot(ctx, workspace, req)
	rec := audit.FromContext(ctx).Record()
	bg := context.WithoutCancel(ctx)
	j, err = t.jobs.start(c.Session, c.Principal, req, func() { done(); t.journal(bg, snap, rec) })
	if err != nil {
		done()
		r := tool.ErrorResult(err.Error(), CodeBackgroundLimit)
		return nil, &r
	}
	if snap != nil {
		setJournal(ctx, "journaled when "+j.id+" ends, as the entry of call "+strconv.Quote(rec.Call))
	}
	return j, nil
}

// Output returns the exec_output tool: a background command's new output
// and state, or, without an id, the session's background commands.
func (t *Tool) Output() *tool.Tool {
	in := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"id": {Type: "string", Description: "A background command's id (from exec with background). Omit it to list this session's background commands."},
	}, PropertyOrder: []string{"id"}}
	return t.g.Tool(tool.Tool{
		Name: "exec_output",
		Description: "Read a background command's output written since the last read, and its state (running, or how it ended); " +
			"without id, list this session's background commands. An ended command stays listed with how it ended and its output's tail (the last " +
			strconv.Itoa(MaxEnded) + " ended ones of the session).",
		InputSchema: in, OutputSchema: outputOrListingSchema(),
		Annotations: tool.Annotations{ReadOnly: true},
	}, false, func(_ context.Context, c *guard.Call) tool.Result {
		id, ok, err := optString(c, "id")
		if err != nil {
			return t.g.Fail(err, nil)
		}
		if !ok {
			return t.listJobs(c.Session)
		}
		j := t.jobs.find(c.Session, id)
		if j == nil {
			return unknownID(id)
		}
		return t.readJob(j)
	})
}

// Kill returns the exec_kill tool: it ends a background command, by
// default with SIGTERM and, after KillGrace, SIGKILL to its whole tree.
func (t *Tool) Kill() *tool.Tool {
	names := []any{"SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"}
	in := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"id": {Type: "string", Description: "The background command's id (from exec with background)."},
		"signal": {
			Type: "string", Enum: names,
			Description: "The signal sent first to every process of the command (default SIGTERM); unless it is SIGKILL, whatever is left after " +
				KillGrace.String() + " is killed.",
		},
	}, PropertyOrder: []string{"id", "signal"}, Required: []string{"id"}}
	return t.g.Tool(tool.Tool{
		Name: "exec_kill",
		Description: "End a background command and all its processes: the signal (default SIGTERM), then SIGKILL after " + KillGrace.String() +
			"; returns how it ended and its last output.",
		InputSchema: in, OutputSchema: outputSchema(),
		Annotations: tool.Annotations{Destructive: true, Idempotent: true},
	}, false, func(ctx context.Context, c *guard.Call) tool.Result {
		id, ok, err := optString(c, "id")
		if err == nil && (!ok || id == "") {
			err = guard.BadArg("id must be a non-empty string")
		}
		if err != nil {
			return t.g.Fail(err, nil)
		}
		name, ok, err := optString(c, "signal")
		if err != nil {
			return t.g.Fail(err, nil)
		}
		sig := syscall.SIGTERM
		if ok {
			if sig, ok = signals[name]; !ok {
				return t.g.Fail(guard.BadArg("signal must be one of SIGTERM, SIGINT, SIGHUP, SIGKILL"), nil)
			}
		}
		j := t.jobs.find(c.Session, id)
		if j == nil {
			return unknownID(id)
		}
		// Waiting for the end holds no call slot.
		idle(ctx, c, func() { j.kill(sig, KillGrace) })
		return t.readJob(j)
	})
}

// outputSchema is exec_kill's output schema: Output's.
func outputSchema() *jsonschema.Schema {
	s, err := jsonschema.For[Output](nil)
	if err != nil {
		panic("toolexec: output schema: " + err.Error()) // fixed at compile time
	}
	// Absent when unknown, never null: one type.
	s.Properties["exit_code"].Types, s.Properties["exit_code"].Type = nil, "integer"
	return s
}

// outputOrListingSchema is exec_output's output schema: an object that is
// exactly one of Output's shape (with an id) and Listing's (without).
func outputOrListingSchema() *jsonschema.Schema {
	l, err := jsonschema.For[Listing](nil)
	if err != nil {
		panic("toolexec: output schema: " + err.Error()) // fixed at compile time
	}
	l.Properties["commands"].Types, l.Properties["commands"].Type = nil, "array"
	item := l.Properties["commands"].Items.Properties["exit_code"]
	item.Types, item.Type = nil, "integer"
	return &jsonschema.Schema{Type: "object", OneOf: []*jsonschema.Schema{outputSchema(), l}}
}

// optString returns the string argument name, ok false when it is absent
// or null. Errors: *guard.ArgError when it is not a string.
func optString(c *guard.Call, name string) (string, bool, error) {
	raw, ok := c.Args[name]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false, guard.BadArg(name + " must be a string")
	}
	return s, true, nil
}

func unknownID(id string) tool.Result {
	return tool.ErrorResult("no background command "+strconv.Quote(id)+" in this session (exec_output without id lists them; of the ended ones, the last "+
		strconv.Itoa(MaxEnded)+" are kept)", CodeUnknownID)
}

// describe returns j's state as reported. When j has ended, its end is
// final (read before its output, so that output is complete).
func describe(j *job) Job {
	v := Job{ID: j.id, Command: j.command, Workdir: j.workdir, State: j.state(), Started: j.started.UTC().Format(time.RFC3339Nano)}
	switch {
	case j.input == nil:
	case j.input.Terminal():
		v.Input = "terminal"
	default:
		v.Input = "stdin"
	}
	if v.State == stateRunning {
		v.DurationMs = time.Since(j.started).Milliseconds()
		return v
	}
	v.DurationMs = j.res.Duration.Milliseconds()
	if j.idledStarting() {
		v.Idle = true
		return v
	}
	if j.err != nil {
		v.Error = j.err.Error()
		return v
	}
	v.Idle = j.idled.Load()
	code := j.res.ExitCode
	v.ExitCode, v.Signal = &code, j.res.Signal
	if k := j.killer(); k != "" {
		v.Signal = k
	}
	v.StdoutTail, v.StderrTail = string(j.stdout.tail(TailBytes)), string(j.stderr.tail(TailBytes))
	return v
}

// readJob returns j's state and its output since the last read. An ended
// job stays listed: once its output is read to its end, it keeps only the
// tails (TailBytes) of its streams.
func (t *Tool) readJob(j *job) tool.Result {
	v := Output{Job: describe(j)}
	out, dropOut := j.stdout.next()
	errs, dropErr := j.stderr.next()
	v.Stdout, v.Stderr, v.StdoutDropped, v.StderrDropped = string(out), string(errs), dropOut, dropErr
	if v.State != stateRunning {
		j.stdout.shrink(TailBytes)
		j.stderr.shrink(TailBytes)
	}
	var b strings.Builder
	b.WriteString(j.id + " " + status(v.Job) + ": " + j.command + "\n")
	b.WriteString("<stdout>\n" + dropped(v.StdoutDropped) + block(v.Stdout) + "</stdout>\n<stderr>\n" + dropped(v.StderrDropped) + block(v.Stderr) + "</stderr>")
	if v.State != stateRunning && j.res.Confinement != nil && len(j.res.Confinement.Disarmed) > 0 {
		// The git state it left that runs a program, disarmed when it
		// ended: the sandbox's marker and the line naming each.
		b.WriteString("\n" + sandbox.DenialMarker(j.mode) + "\n" + disarmedDetail(j.res.Confinement.Disarmed))
	}
	if r, ok := t.runningDenial(j, v, b.String()); ok {
		return r
	}
	return tool.Result{Text: b.String(), Value: v}
}

// listJobs lists the session's background commands.
func (t *Tool) listJobs(sess *session.Session) tool.Result {
	v := Listing{Commands: []Job{}}
	var b strings.Builder
	for _, j := range t.jobs.list(sess) {
		d := describe(j)
		v.Commands = append(v.Commands, d)
		b.WriteString(j.id + " " + status(d) + ", started " + d.Started + ": " + j.command + "\n")
	}
	if len(v.Commands) == 0 {
		b.WriteString("no background commands in this session\n")
	}
	return tool.Result{Text: strings.TrimSuffix(b.String(), "\n"), Value: v}
}

// status is a command's state in words.
func status(j Job) string {
	ms := strconv.FormatInt(j.DurationMs, 10) + " ms"
	switch j.State {
	case stateRunning:
		return "running (" + ms + ")"
	case stateFailed:
		return "failed to start: " + j.Error
	case stateKilled:
		return "killed by " + j.Signal + " (" + ms + ")"
	case stateTimedOut:
		if j.Idle {
			return "ended after no input for the idle limit (" + ms + ")"
		}
		return "timed out and killed (" + ms + ")"
	}
	return "exited with code " + strconv.Itoa(*j.ExitCode) + " (" + ms + ")"
}

// dropped is the line saying n bytes were dropped, "" for none.
func dropped(n int64) string {
	if n == 0 {
		return ""
	}
	return "[... " + strconv.FormatInt(n, 10) + " bytes dropped: only the last 1 MiB is kept between reads ...]\n"
}

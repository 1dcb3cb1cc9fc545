package subproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Run runs spec through the helper program (the helper harness embeds, the
// harness binary, or a test binary whose TestMain calls Main; run by descriptor, as is the confining
// stage it starts), keeping at most outputLimit bytes
// of each of stdout and stderr (head and tail), until the command ends,
// timeout passes (0: no timeout) or ctx is done. Then the helper is asked to
// stop (SIGTERM) and kills the whole tree; if it has not reported within
// killGrace it is killed itself.
//
// Errors: the helper could not be started, or it ended without a report
// (killed, crashed). A command that could not start inside the helper is not
// an error: Status.Started is false and Status.Error says why.
//
// w, when not zero, follows the run: its writers get the output as it
// comes, its signals reach every process of the command (see Watch).
func Run(ctx context.Context, helper *Program, spec Spec, timeout time.Duration, outputLimit int, w Watch) (Outcome, error) {
	return outcome(ctx, timeout, outputLimit, w, func(ctx context.Context, _ *Outcome, stdout, stderr io.Writer) (Status, time.Duration, error) {
		return runHelper(ctx, helper, spec, stdio{stdout, stderr, nil, w.Input, nil}, w.Signals)
	})
}

// outcome runs one command through run with ctx bounded by timeout (0: no
// timeout) and captures of outputLimit bytes (teed to w's writers), and says
// whether a stop was the timeout's or the caller's.
//
// The calling goroutine keeps its OS thread for the run: the children are
// started with a parent-death signal, which Linux sends when the thread
// that started them ends, and the runtime ends threads (a goroutine that
// locked its thread and returns, as the Landlock pool's do); so a long run
// is never killed by a thread exit that is not the process's.
func outcome(ctx context.Context, timeout time.Duration, outputLimit int, w Watch,
	run func(ctx context.Context, out *Outcome, stdout, stderr io.Writer) (Status, time.Duration, error),
) (Outcome, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	out := Outcome{Stdout: NewCapture(outputLimit), Stderr: NewCapture(outputLimit)}
	stdout, stderr := tee(out.Stdout, w.Stdout), tee(out.Stderr, w.Stderr)
	runCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	st, d, err := run(runCtx, &out, stdout, stderr)
	out.Status, out.Duration = st, d
	if st.Stopped {
		out.Cancelled = ctx.Err() != nil
		out.TimedOut = !out.Cancelled
	}
	return out, err
}

func runHelper(ctx context.Context, helper *Program, spec Spec, out stdio, signals <-chan syscall.Signal) (Status, time.Duration, error) {
	var st Status
	term, termDone, err := out.input.attach(&spec, out.stdout)
	if err != nil {
		return st, 0, err
	}
	// Returns once the helper has ended, and with it the command's tree.
	defer termDone()
	specR, specW, err := os.Pipe()
	if err != nil {
		return st, 0, err
	}
	defer specR.Close() //nolint:errcheck // read end, closed after the start
	statusR, statusW, err := os.Pipe()
	if err != nil {
		_ = specW.Close()
		return st, 0, err
	}
	defer statusR.Close() //nolint:errcheck // read end

	cmd := &exec.Cmd{Path: execPath(helperFD), Args: []string{"harness", HelperArg}}
	cmd.Env = selfEnv // the helper needs none; the command's is in the spec
	cmd.Stdin, cmd.Stdout, cmd.Stderr = out.input.stdin(), out.stdout, out.stderr
	cmd.ExtraFiles = []*os.File{specR, statusW, helper.f} // fds 3, 4 and helperFD
	if term != nil {
		cmd.ExtraFiles = filesAt(cmd.ExtraFiles, termFD, term)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A session of its own: a terminal's ^C reaches the parent, which
		// then stops the tree through the helper, and the server's
		// controlling terminal, if it has one, is not the command's
		// (/dev/tty fails), so nothing of it reaches that terminal.
		Setsid: true,
		// The parent's death asks the helper to kill its tree.
		Pdeathsig: syscall.SIGTERM,
	}
	cmd.WaitDelay = killGrace

	started := time.Now()
	if err := cmd.Start(); err != nil {
		_ = specW.Close()
		_ = statusW.Close()
		return st, 0, fmt.Errorf("start the command helper %s: %w", helper.Path(), err)
	}
	_ = statusW.Close() // the helper holds its copy
	if term != nil {
		_ = term.Close() // the helper holds its copy
	}
	encErr := json.NewEncoder(specW).Encode(spec)
	_ = specW.Close()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	stopped := false
	waiting := true
	for waiting {
		select {
		case waitErr = <-done:
			waiting = false
		case sig := <-signals:
			// The helper is the tree's root (a subreaper: orphans of
			// the command are its children too).
			signalTree(cmd.Process.Pid, sig)
		case <-ctx.Done():
			waiting = false
			stopped = true
		}
	}
	if stopped {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case waitErr = <-done:
		case <-time.After(killGrace):
			_ = cmd.Process.Kill()
			waitErr = <-done
		}
	}
	d := time.Since(started)
	if encErr != nil {
		return st, d, fmt.Errorf("send the command to the helper: %w", encErr)
	}
	raw, _ := io.ReadAll(statusR)
	if err := json.Unmarshal(raw, &st); err != nil {
		var exitErr *exec.ExitError
		if stopped && errors.As(waitErr, &exitErr) && exitErr.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM {
			// The stop came before the helper could catch it, so before
			// it started anything: nothing ran, nothing is left.
			return Status{Stopped: true, ExitCode: -1, Error: "stopped before the command started"}, d, nil
		}
		if waitErr == nil {
			waitErr = errors.New("no status")
		}
		return st, d, fmt.Errorf("the command helper ended without a report: %w", waitErr)
	}
	return st, d, nil
}

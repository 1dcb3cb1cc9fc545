package subproc

import (
	"io"
	"syscall"
)

// Watch is how a caller follows a command while it runs; its zero value
// follows nothing.
type Watch struct {
	// Stdout and Stderr, when not nil, get a copy of every write of the
	// command to the stream, as it comes (the Outcome keeps its capped
	// copy). A write must be quick and must not fail: the command's
	// output waits for it, and a failed write ends the stream's copy.
	Stdout, Stderr io.Writer
	// Signals, when not nil, carries signals to send to every process of
	// the command while it runs (SIGTERM: asking it to end); each is sent
	// once to each process alive then. Ending the command for good is the
	// context's job.
	Signals <-chan syscall.Signal
	// Input, when not nil, is the command's input while it runs: a stdin
	// pipe or a terminal (see Input); nil gives it /dev/null.
	Input *Input
}

// tee returns c, or a writer to both c and w when w is not nil.
func tee(c *Capture, w io.Writer) io.Writer {
	if w == nil {
		return c
	}
	return io.MultiWriter(c, w)
}

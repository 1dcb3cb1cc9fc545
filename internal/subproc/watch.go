package subproc

import (
	"io"
	"sync"
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

// startGate is a Watch writer that holds what is written to it until the
// command started (open) and drops it when the command never did (end):
// before the start only bubblewrap writes to the stream, and its message
// of a start made again (a path of the view vanished) is not the
// command's output; the run's status says why a last start failed. It
// holds at most maxHeld bytes: more is the command's, and opens it.
type startGate struct {
	mu     sync.Mutex
	w      io.Writer
	held   []byte
	opened bool
}

// maxHeld bounds what a startGate holds before the start.
const maxHeld = 64 << 10

// holdUntilStart returns a startGate writing to w, nil when w is nil (a
// nil gate's methods do nothing).
func holdUntilStart(w io.Writer) *startGate {
	if w == nil {
		return nil
	}
	return &startGate{w: w}
}

func (g *startGate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.opened && len(g.held)+len(p) <= maxHeld {
		g.held = append(g.held, p...)
		return len(p), nil
	}
	if err := g.flush(); err != nil {
		return 0, err
	}
	return g.w.Write(p)
}

// open passes what was held, and every later write, to the stream.
func (g *startGate) open() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = g.flush() // a failed write ends the stream's copy (Watch)
}

// flush opens g; g.mu is held.
func (g *startGate) flush() error {
	g.opened = true
	held := g.held
	g.held = nil
	if len(held) == 0 {
		return nil
	}
	_, err := g.w.Write(held)
	return err
}

// end is called once the run is over: what is still held is the
// command's when it started, and dropped when it did not.
func (g *startGate) end(started bool) {
	if started {
		g.open()
		return
	}
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = nil
}

package subproc

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// termFD is the descriptor of the socket the stage that makes a command's
// terminal sends the terminal's master back on (SCM_RIGHTS): the helper's
// in the plain and Landlock isolations, the inner stage's under bubblewrap
// (below bwrapArgsFD).
const termFD = netNetFD + 1

// terminalEnv is a terminal command's TERM, in place of any other (the
// server's TERM names the server's terminal, not the command's): a terminal
// without cursor addressing or colors, so programs write plain text a
// model can read.
const terminalEnv = "TERM=dumb"

// Errors of Input.
var (
	// ErrInputEnded: the command has ended (or never started); nothing
	// reads its input any more.
	ErrInputEnded = errors.New("the command has ended; it reads no more input")
	// ErrInputClosed: the end of input was already sent (CloseInput).
	ErrInputClosed = errors.New("the command's input was already closed")
	// ErrNotReady: the command's terminal was not ready within the wait
	// (its sandbox is still starting).
	ErrNotReady = errors.New("the command's terminal is not ready yet (its sandbox is still starting); try again")
	// ErrInputFull: the command did not read what was written within the
	// wait; what it took is counted, the rest was not sent.
	ErrInputFull = errors.New("the command did not read its input within the wait (it is busy, or not reading)")
	// ErrNoTerminal: Resize of a command without a terminal.
	ErrNoTerminal = errors.New("the command has no terminal")
	// ErrTerminalClosed: the command closed every descriptor of its
	// terminal; it reads no input from it any more.
	ErrTerminalClosed = errors.New("the command closed its terminal; it reads no input from it")
)

// Input is the standard input of one run, written while the command runs
// (issue 38): a pipe, or, for a command with a terminal, the master of a
// pseudo-terminal. Under bubblewrap the terminal is made inside the
// command's view, from its own devpts instance (the host's terminals are
// not there); elsewhere the helper makes it from the host's devpts. Either
// way it is a fresh one, whose master only this Input holds: it is the
// command's controlling terminal and stdin, stdout and stderr (one stream,
// read as the command's stdout), and the server's own terminal, if it has
// one, is never the command's (the helper starts in a session of its own).
//
// An Input serves one run: Watch.Input hands it to Run or RunBwrap (which
// may start the command more than once when its view changed; the input
// goes to the start that runs), and the caller calls Close once the run has
// returned. Its methods are safe for concurrent use.
type Input struct {
	terminal bool
	size     Winsize
	r, w     *os.File // the pipe, without a terminal

	mu     sync.Mutex
	master *os.File // the terminal's master while a started command has it
	hungUp bool     // the last master's other side was closed everywhere
	ended  bool
	closed bool          // CloseInput was called on a pipe
	change chan struct{} // closed and replaced when master or ended changes
}

// NewInput returns an input: a pipe, or with terminal a pseudo-terminal of
// rows by cols character cells (0 rows or columns: 24 by 80). Errors: the
// pipe cannot be made.
func NewInput(terminal bool, rows, cols uint16) (*Input, error) {
	size := Winsize{Rows: rows, Cols: cols}
	if size.Rows == 0 || size.Cols == 0 {
		size = Winsize{Rows: 24, Cols: 80}
	}
	in := &Input{terminal: terminal, size: size, change: make(chan struct{})}
	if !terminal {
		var err error
		if in.r, in.w, err = os.Pipe(); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Terminal reports whether the command gets a terminal.
func (in *Input) Terminal() bool { return in.terminal }

// Write sends p to the command: to its stdin pipe, or typed on its terminal
// (control characters included: "\x03" is Ctrl-C, "\x04" Ctrl-D). It waits
// at most wait for the terminal to be ready and for the command to take p,
// and returns how many bytes it took. Errors: ErrInputEnded, ErrInputClosed,
// ErrNotReady, ErrInputFull.
func (in *Input) Write(p []byte, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	f, err := in.target(deadline)
	if err != nil {
		return 0, err
	}
	_ = f.SetWriteDeadline(deadline)
	n, err := f.Write(p)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = ErrInputFull
	case errors.Is(err, os.ErrClosed), errors.Is(err, unix.EPIPE), errors.Is(err, unix.EIO):
		err = ErrInputEnded
	}
	return n, err
}

// Ready waits at most wait, and while ctx lasts, for the command to be able
// to take input: its terminal made, once its sandbox has started (a pipe is
// ready at once). Errors: ErrNotReady, ErrInputEnded, ErrInputClosed,
// ErrTerminalClosed, ctx's error.
func (in *Input) Ready(ctx context.Context, wait time.Duration) error {
	_, err := in.targetCtx(ctx, time.Now().Add(wait))
	return err
}

// CloseInput sends the end of input: it closes the stdin pipe, or types
// Ctrl-D (the terminal's end-of-file character) on a terminal. Errors: as
// Write's.
func (in *Input) CloseInput(wait time.Duration) error {
	if in.terminal {
		_, err := in.Write([]byte{4}, wait)
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.ended:
		return ErrInputEnded
	case in.closed:
		return ErrInputClosed
	}
	in.closed = true
	return in.w.Close()
}

// Resize sets the terminal's size; the command gets SIGWINCH. It waits at
// most wait for the terminal. Errors: ErrNoTerminal, ErrInputEnded,
// ErrNotReady, or the kernel's.
func (in *Input) Resize(rows, cols uint16, wait time.Duration) error {
	if !in.terminal {
		return ErrNoTerminal
	}
	size := Winsize{Rows: rows, Cols: cols}
	if size.Rows == 0 || size.Cols == 0 {
		return errors.New("a terminal's size needs rows and columns")
	}
	f, err := in.target(time.Now().Add(wait))
	if err != nil {
		return err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioctlErr error
	if err := rc.Control(func(fd uintptr) {
		ioctlErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	}); err != nil {
		return ErrInputEnded
	}
	return ioctlErr
}

// Close ends the input: writes fail with ErrInputEnded from now on and the
// pipe's descriptors are closed. Call it once the run has returned.
func (in *Input) Close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ended {
		return
	}
	in.ended = true
	in.signal()
	for _, f := range []*os.File{in.r, in.w} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// signal wakes those waiting for a change. in.mu is held.
func (in *Input) signal() {
	close(in.change)
	in.change = make(chan struct{})
}

// target returns the file writes go to, waiting until deadline for a
// terminal's master.
func (in *Input) target(deadline time.Time) (*os.File, error) {
	return in.targetCtx(context.Background(), deadline)
}

// targetCtx is target, which gives up with ctx's error once ctx ends.
func (in *Input) targetCtx(ctx context.Context, deadline time.Time) (*os.File, error) {
	for {
		in.mu.Lock()
		switch {
		case in.ended:
			in.mu.Unlock()
			return nil, ErrInputEnded
		case !in.terminal && in.closed:
			in.mu.Unlock()
			return nil, ErrInputClosed
		case !in.terminal:
			in.mu.Unlock()
			return in.w, nil
		case in.master != nil:
			f := in.master
			in.mu.Unlock()
			return f, nil
		case in.hungUp:
			in.mu.Unlock()
			return nil, ErrTerminalClosed
		}
		ch := in.change
		in.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
			t.Stop()
		case <-t.C:
			return nil, ErrNotReady
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// stdin is what the command reads, as exec.Cmd.Stdin: the pipe's read
// end, or, without an input or with a terminal (whose stage puts the
// terminal there), a nil interface, which exec.Cmd opens as /dev/null (a
// nil *os.File in it would close descriptor 0 in the child instead, and a
// Go program started on a closed descriptor 0 may die opening /dev/null).
func (in *Input) stdin() io.Reader {
	if in == nil || in.terminal {
		return nil
	}
	return in.r
}

// attach readies one start of spec for in: with a terminal, spec asks
// for one of in's size, with TERM set (withTerminalEnv), and the socket its
// stage sends the master on is made and followed (receive); child is that
// socket's end for termFD (nil without a terminal). done, called once the
// start has ended, closes child if the caller has not and waits for the
// following to stop.
func (in *Input) attach(spec *Spec, out io.Writer) (child *os.File, done func(), err error) {
	if in == nil || !in.terminal {
		return nil, func() {}, nil
	}
	size := in.size
	spec.Terminal, spec.Env = &size, withTerminalEnv(spec.Env)
	child, wait, err := in.receive(out)
	if err != nil {
		return nil, nil, err
	}
	return child, func() { _ = child.Close(); wait() }, nil
}

// receive makes the socket a start's terminal stage sends the master on
// (the child's end, for termFD) and follows it: once the master comes, it
// is the target of writes and what the command writes to its terminal is
// copied to out, until every copy of the terminal's other side is closed.
// wait, called once the start has ended (and with it every process that
// could hold the terminal), stops following and closes the master.
func (in *Input) receive(out io.Writer) (child *os.File, wait func(), err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	child = os.NewFile(uintptr(fds[1]), "terminal socket")
	pf := os.NewFile(uintptr(fds[0]), "terminal socket")
	conn, err := net.FileConn(pf)
	_ = pf.Close()
	if err != nil {
		_ = child.Close()
		return nil, nil, err
	}
	uc := conn.(*net.UnixConn)
	var (
		masterMu sync.Mutex
		master   *os.File
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = uc.Close() }()
		f := recvMaster(uc)
		if f == nil {
			return
		}
		masterMu.Lock()
		master = f
		masterMu.Unlock()
		in.mu.Lock()
		ended := in.ended
		if !ended {
			in.master, in.hungUp = f, false
			in.signal()
		}
		in.mu.Unlock()
		if !ended {
			copyTerminal(out, f)
		}
		in.mu.Lock()
		if in.master == f {
			// Until the run ends or starts the command again: writes
			// fail at once rather than wait for a terminal that is gone.
			in.master, in.hungUp = nil, true
			in.signal()
		}
		in.mu.Unlock()
		_ = f.Close()
	}()
	wait = func() {
		// What the command wrote last is still in the terminal's buffer:
		// read it, then give up on a side a process outside may hold.
		drain := time.Now().Add(terminalDrain)
		_ = uc.SetReadDeadline(drain)
		masterMu.Lock()
		if master != nil {
			_ = master.SetReadDeadline(drain)
		}
		masterMu.Unlock()
		<-done
	}
	return child, wait, nil
}

// terminalDrain bounds how long a run reads its terminal after it ended.
const terminalDrain = 200 * time.Millisecond

// recvMaster reads one message with one descriptor from uc and returns it
// as a pollable file; nil when the other side closed first or sent none.
func recvMaster(uc *net.UnixConn) *os.File {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil || oobn == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return nil
	}
	unix.CloseOnExec(fds[0])
	if err := unix.SetNonblock(fds[0], true); err != nil {
		_ = unix.Close(fds[0])
		return nil
	}
	return os.NewFile(uintptr(fds[0]), "terminal")
}

// copyTerminal copies what the command writes to its terminal to out until
// the terminal's other side is closed everywhere (EIO) or the read
// deadline passes.
func copyTerminal(out io.Writer, master *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := master.Read(buf)
		if n > 0 {
			_, _ = out.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// makeTerminal makes a pseudo-terminal of size from the devpts instance at
// /dev (the view's own, under bubblewrap), sends its master on the socket
// at termFD (which it closes) and returns its other side, for the command's
// stdin, stdout and stderr and controlling terminal.
func makeTerminal(size Winsize) (*os.File, error) {
	sock := os.NewFile(termFD, "terminal socket")
	if sock == nil {
		return nil, errors.New("the stage was started without its terminal socket")
	}
	defer func() { _ = sock.Close() }()
	master, tty, err := pty.Open()
	if err != nil {
		return nil, errors.New("cannot make the command's terminal: " + err.Error())
	}
	defer func() { _ = master.Close() }()
	if err := pty.Setsize(master, &pty.Winsize{Rows: size.Rows, Cols: size.Cols}); err != nil {
		_ = tty.Close()
		return nil, errors.New("cannot size the command's terminal: " + err.Error())
	}
	if err := unix.Sendmsg(int(sock.Fd()), []byte{0}, unix.UnixRights(int(master.Fd())), nil, 0); err != nil {
		_ = tty.Close()
		return nil, errors.New("cannot hand over the command's terminal: " + err.Error())
	}
	return tty, nil
}

// takeTerminal makes tty the calling process's controlling terminal and its
// stdin, stdout and stderr, in a session of its own (the stage under
// bubblewrap, which is already a session leader there).
func takeTerminal(tty *os.File) error {
	if _, err := unix.Setsid(); err != nil && !errors.Is(err, unix.EPERM) {
		return errors.New("cannot start the terminal's session: " + err.Error())
	}
	fd := int(tty.Fd())
	if err := unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0); err != nil {
		return errors.New("cannot take the command's terminal: " + err.Error())
	}
	for target := range 3 {
		if err := unix.Dup3(fd, target, 0); err != nil {
			return errors.New("cannot connect the command's terminal: " + err.Error())
		}
	}
	return tty.Close()
}

// withTerminalEnv returns env with TERM set to terminalEnv.
func withTerminalEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TERM=") {
			out = append(out, kv)
		}
	}
	return append(out, terminalEnv)
}

// Hidden reports whether what is typed now is hidden: the terminal reads
// a line (canonical mode) without echoing it, as a password or one-time
// code prompt does. A program that edits its own lines (readline, a REPL)
// turns echo off too, but reads raw: not hidden. A pipe, or a terminal not
// ready or gone, hides nothing.
func (in *Input) Hidden() bool {
	if !in.terminal {
		return false
	}
	in.mu.Lock()
	f := in.master
	in.mu.Unlock()
	if f == nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	hidden := false
	_ = rc.Control(func(fd uintptr) {
		if t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS); err == nil {
			hidden = t.Lflag&unix.ECHO == 0 && t.Lflag&unix.ICANON != 0
		}
	})
	return hidden
}

//go:build linux

package subproc_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// screen is a Watch writer that can wait for text to appear in what was
// written.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits (at most 20 s) until what was written holds want n times.
func (s *screen) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Count(s.String(), want) >= n }, 20*time.Second, 10*time.Millisecond,
		"waiting for %q; the screen: %q", want, s.String())
}

type runnerFunc func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error)

// isolations are the three ways a command runs: the helper unconfined,
// the helper under Landlock, and bubblewrap.
func isolations(t *testing.T) []struct {
	name string
	run  runnerFunc
} {
	return []struct {
		name string
		run  runnerFunc
	}{
		{"helper, unconfined", func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error) {
			return subproc.Run(ctx, helperProgram(t), spec, 0, 1<<20, w)
		}},
		{"helper, Landlock", func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error) {
			spec.Confine = &subproc.Confinement{WritableRoots: []string{spec.Dir}}
			return subproc.Run(ctx, helperProgram(t), spec, 0, 1<<20, w)
		}},
		{"helper, Landlock, protected paths in a mount namespace", func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error) {
			git := filepath.Join(spec.Dir, ".git")
			if err := os.Mkdir(git, 0o755); err != nil {
				return subproc.Outcome{}, err
			}
			spec.Confine = &subproc.Confinement{WritableRoots: []string{spec.Dir}, ReadOnlyPaths: []string{git}}
			return subproc.Run(ctx, helperProgram(t), spec, 0, 1<<20, w)
		}},
		{"bubblewrap", func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error) {
			spec.Confine = &subproc.Confinement{WritableRoots: []string{spec.Dir}}
			return subproc.RunBwrap(ctx, sandbox(t), spec, 0, 1<<20, nil, w)
		}},
	}
}

// start runs command in the background of the test with in as its input,
// its output on a screen; the returned function waits for its outcome.
func start(t *testing.T, run runnerFunc, command string, in *subproc.Input) (*screen, func() subproc.Outcome) {
	t.Helper()
	scr := &screen{}
	spec := subproc.Spec{Command: command, Dir: t.TempDir(), Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-256color"}}
	type result struct {
		out subproc.Outcome
		err error
	}
	ch := make(chan result, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	go func() {
		out, err := run(ctx, spec, subproc.Watch{Stdout: scr, Input: in})
		in.Close()
		ch <- result{out, err}
	}()
	return scr, func() subproc.Outcome {
		defer cancel()
		r := <-ch
		require.NoError(t, r.err)
		return r.out
	}
}

// TestTerminal (issue 38): a command asked for a terminal has one on stdin,
// stdout and stderr (one stream), of the size asked, named by /dev/tty; a
// resize reaches it (SIGWINCH, the new size); a line typed reaches a
// read; Ctrl-C interrupts the foreground program (its trap runs) and the
// command ends with the code the trap gives. TERM is dumb.
func TestTerminal(t *testing.T) {
	requireLandlock(t)
	for _, r := range isolations(t) {
		t.Run(r.name, func(t *testing.T) {
			in, err := subproc.NewInput(true, 30, 100)
			require.NoError(t, err)
			scr, wait := start(t, r.run, `test -t 0 && test -t 1 && test -t 2 && echo "tty:yes"; echo "size:$(stty size)"; echo "term:$TERM"
echo err >&2; test "$(tty)" = "$(readlink -f /dev/fd/0)" && echo same > /dev/tty
trap 'w=1; echo "winch:$(stty size)"' WINCH; echo resize; while [ -z "$w" ]; do sleep 0.05; done
printf 'name? '; read -r n; echo "hello $n"
trap 'echo interrupted; exit 7' INT
echo ready; while :; do sleep 0.05; done`, in)
			scr.waitFor(t, "resize", 1)
			require.NoError(t, in.Resize(40, 120, 5*time.Second))
			scr.waitFor(t, "winch:40 120", 1)
			scr.waitFor(t, "name? ", 1)
			n, err := in.Write([]byte("ada\n"), 5*time.Second)
			require.NoError(t, err)
			assert.Equal(t, 4, n)
			scr.waitFor(t, "ready", 1)
			_, err = in.Write([]byte{3}, 5*time.Second)
			require.NoError(t, err)
			out := wait()
			text := scr.String()
			assert.Contains(t, text, "tty:yes\r\n")
			assert.Contains(t, text, "size:30 100\r\n")
			assert.Contains(t, text, "term:dumb\r\n")
			assert.Contains(t, text, "err\r\n", "stderr is the terminal too")
			assert.Contains(t, text, "same\r\n", "/dev/tty is the command's terminal")
			assert.Contains(t, text, "ada\r\n", "the terminal echoes what is typed")
			assert.Contains(t, text, "hello ada\r\n")
			assert.Contains(t, text, "interrupted")
			assert.Equal(t, 7, out.Status.ExitCode, text)
			assert.Equal(t, text, out.Stdout.String(), "the capture has the terminal's stream")
			assert.Empty(t, out.Stderr.String())
			_, err = in.Write([]byte("late\n"), time.Second)
			assert.ErrorIs(t, err, subproc.ErrInputEnded)
		})
	}
}

// TestInputPipe (issue 38): without a terminal, the input is a pipe:
// stdin is not a terminal, there is no controlling terminal, a line
// written reaches a read, and closing the input is the end of file.
func TestInputPipe(t *testing.T) {
	requireLandlock(t)
	for _, r := range isolations(t) {
		t.Run(r.name, func(t *testing.T) {
			in, err := subproc.NewInput(false, 0, 0)
			require.NoError(t, err)
			scr, wait := start(t, r.run, `test -t 0 || echo "tty:no"; (: > /dev/tty) 2>/dev/null || echo "ctty:none"
echo ready; read -r n; echo "hello $n"; wc -c`, in)
			scr.waitFor(t, "ready", 1)
			_, err = in.Write([]byte("ada\n"), 5*time.Second)
			require.NoError(t, err)
			scr.waitFor(t, "hello ada", 1)
			_, err = in.Write([]byte("12345"), 5*time.Second)
			require.NoError(t, err)
			require.NoError(t, in.CloseInput(time.Second))
			out := wait()
			assert.Equal(t, 0, out.Status.ExitCode)
			assert.Equal(t, "tty:no\nctty:none\nready\nhello ada\n5\n", out.Stdout.String())
			assert.ErrorIs(t, in.CloseInput(time.Second), subproc.ErrInputEnded)
			assert.ErrorIs(t, in.Resize(1, 1, time.Second), subproc.ErrNoTerminal)
		})
	}
}

// TestTerminalInjection (issue 38): TIOCSTI and TIOCLINUX are refused
// (EPERM) to a confined command on any terminal, its own included, also
// with high bits set in the request (the kernel reads its low 32 bits).
func TestTerminalInjection(t *testing.T) {
	requireLandlock(t)
	py, err := findPython()
	if err != nil {
		t.Skip("python3 is not installed")
	}
	for _, r := range isolations(t) {
		if r.name == "helper, unconfined" {
			continue // nothing is refused there
		}
		t.Run(r.name, func(t *testing.T) {
			in, err := subproc.NewInput(true, 0, 0)
			require.NoError(t, err)
			scr, wait := start(t, r.run, py+` -c 'import fcntl, termios, errno
for req in (termios.TIOCSTI, termios.TIOCSTI | (1 << 32), 0x541C):
    try:
        fcntl.ioctl(0, req, b"x")
        print("allowed", hex(req))
    except OSError as e:
        print("refused", hex(req), errno.errorcode[e.errno])'`, in)
			out := wait()
			assert.Empty(t, out.Status.Error)
			assert.Equal(t, 0, out.Status.ExitCode, scr.String())
			assert.Contains(t, scr.String(), "refused 0x5412 EPERM")
			assert.Contains(t, scr.String(), "refused 0x100005412 EPERM")
			assert.Contains(t, scr.String(), "refused 0x541c EPERM")
			assert.NotContains(t, scr.String(), "allowed")
		})
	}
}

// TestTerminalClosedByTheCommand (issue 38): once the command has closed
// every descriptor of its terminal, input is refused at once, saying so,
// rather than waiting for a terminal that will not come back. (The
// terminal is then hung up: a command that does not ignore SIGHUP ends.)
func TestTerminalClosedByTheCommand(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	for _, r := range isolations(t) {
		t.Run(r.name, func(t *testing.T) {
			in, err := subproc.NewInput(true, 0, 0)
			require.NoError(t, err)
			scr, wait := start(t, r.run, `trap '' HUP; echo closing; exec 0<&- 1>&- 2>&-; sleep 3`, in)
			scr.waitFor(t, "closing", 1)
			require.Eventually(t, func() bool {
				_, err := in.Write([]byte("x"), 5*time.Second)
				return errors.Is(err, subproc.ErrTerminalClosed)
			}, 10*time.Second, 20*time.Millisecond)
			assert.ErrorIs(t, in.Resize(5, 5, 5*time.Second), subproc.ErrTerminalClosed)
			out := wait()
			assert.Equal(t, 0, out.Status.ExitCode)
		})
	}
}

// TestHostTerminalsHidden (issue 38): a confined command cannot open the
// host's pseudo-terminals by path (the user's shells' among them): under
// bubblewrap its /dev/pts is its own devpts, under Landlock an empty
// read-only tmpfs; so it neither reads what is typed there nor drives them.
func TestHostTerminalsHidden(t *testing.T) {
	requireLandlock(t)
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer func() { _ = master.Close(); _ = tty.Close() }()
	name := tty.Name()
	for _, r := range isolations(t) {
		if r.name == "helper, unconfined" {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			in, err := subproc.NewInput(false, 0, 0)
			require.NoError(t, err)
			_ = in.CloseInput(time.Second)
			scr, wait := start(t, r.run, `if (: < `+name+`) 2>/dev/null; then echo readable; else echo hidden; fi; ls /dev/pts | grep -cx '[0-9]*' || true`, in)
			out := wait()
			assert.Equal(t, 0, out.Status.ExitCode, scr.String())
			assert.Equal(t, "hidden\n0\n", scr.String(), "no host terminal is there")
		})
	}
}

// TestLandlockStageLeavesNoCapability: the Landlock isolation's stage
// mounts in a user namespace of its own with an ambient CAP_SYS_ADMIN
// (not root); the command it runs keeps no ambient capability and, run by
// an ordinary user, no capability at all.
func TestLandlockStageLeavesNoCapability(t *testing.T) {
	requireLandlock(t)
	for _, r := range isolations(t)[1:3] {
		t.Run(r.name, func(t *testing.T) {
			in, err := subproc.NewInput(false, 0, 0)
			require.NoError(t, err)
			scr, wait := start(t, r.run, `grep -E '^Cap(Eff|Amb)' /proc/self/status`, in)
			out := wait()
			require.Empty(t, out.Status.Error)
			assert.Contains(t, scr.String(), "CapAmb:\t0000000000000000\n")
			if os.Geteuid() != 0 {
				assert.Contains(t, scr.String(), "CapEff:\t0000000000000000\n")
			}
		})
	}
}

// TestInputReady: Ready waits for a command's terminal, made once its
// sandbox started, and a line written then reaches the command; a terminal
// never made is ErrNotReady when the wait ends, an ended input
// ErrInputEnded; a pipe is ready at once.
func TestInputReady(t *testing.T) {
	requireLandlock(t)
	never, err := subproc.NewInput(true, 24, 80)
	require.NoError(t, err)
	assert.ErrorIs(t, never.Ready(t.Context(), 50*time.Millisecond), subproc.ErrNotReady)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, never.Ready(cancelled, time.Minute), context.Canceled)
	never.Close()
	assert.ErrorIs(t, never.Ready(t.Context(), time.Second), subproc.ErrInputEnded)
	pipe, err := subproc.NewInput(false, 0, 0)
	require.NoError(t, err)
	require.NoError(t, pipe.Ready(t.Context(), 0))
	pipe.Close()

	for _, r := range isolations(t) {
		t.Run(r.name, func(t *testing.T) {
			in, err := subproc.NewInput(true, 24, 80)
			require.NoError(t, err)
			scr, wait := start(t, r.run, `read -r n; echo "got $n"`, in)
			// At once, while the sandbox is being made.
			require.NoError(t, in.Ready(t.Context(), 30*time.Second))
			_, err = in.Write([]byte("ada\n"), 5*time.Second)
			require.NoError(t, err)
			scr.waitFor(t, "got ada", 1)
			assert.Equal(t, 0, wait().Status.ExitCode)
		})
	}
}

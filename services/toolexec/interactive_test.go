package toolexec_test

import (
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolexec"
)

// interactive starts command with args (interactive or tty) and returns
// its id and the first result.
func (b *bg) interactive(t *testing.T, sess *session.Session, args map[string]any) (string, toolexec.Output) {
	t.Helper()
	res := b.call(t, sess, "exec", args)
	require.False(t, res.IsError, res.Text)
	v, ok := res.Value.(toolexec.Output)
	require.True(t, ok, "an interactive start returns Output, got %T: %s", res.Value, res.Text)
	return v.ID, v
}

// typeTo sends input to id and returns exec_input's result.
func (b *bg) typeTo(t *testing.T, sess *session.Session, id string, args map[string]any) toolexec.Output {
	t.Helper()
	args["id"] = id
	res := b.call(t, sess, "exec_input", args)
	require.False(t, res.IsError, res.Text)
	return res.Value.(toolexec.Output)
}

// untilText reads id until all its stdout read so far (from before too)
// holds want, and returns that text.
func (b *bg) untilText(t *testing.T, sess *session.Session, id, before, want string) string {
	t.Helper()
	text := before
	if strings.Contains(text, want) {
		return text
	}
	reads := b.until(t, sess, id, func(o toolexec.Output) bool {
		text += o.Stdout
		return strings.Contains(text, want) || o.State != "running"
	})
	require.Contains(t, text, want, "the last read: %+v", reads[len(reads)-1])
	return text
}

// TestPythonREPLOnATerminal (issue 38): python3 -i on a terminal answers
// print(6*7) with 42, Ctrl-C interrupts a busy loop and the REPL answers
// again, Ctrl-D ends it with its exit code. What the model reads is text:
// no escape sequence, no carriage return.
func TestPythonREPLOnATerminal(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 is not installed at /usr/bin/python3 (apt-get install python3)")
	}
	b := newBG(t, execsandbox.Config{})
	id, first := b.interactive(t, b.sess, map[string]any{"command": py + " -i -q", "tty": true, "wait_ms": 10000})
	b.untilText(t, b.sess, id, first.Stdout, ">>> ")
	out := b.typeTo(t, b.sess, id, map[string]any{"input": "print(6*7)\n", "wait_ms": 10000})
	text := b.untilText(t, b.sess, id, out.Stdout, "42\n")
	assert.Contains(t, text, "print(6*7)\n42\n>>> ", "the echo, the answer and the prompt, as lines")
	b.typeTo(t, b.sess, id, map[string]any{"input": "while True: pass\n\n", "wait_ms": 300})
	out = b.typeTo(t, b.sess, id, map[string]any{"input": "\x03", "wait_ms": 10000})
	text = b.untilText(t, b.sess, id, out.Stdout, "KeyboardInterrupt")
	out = b.typeTo(t, b.sess, id, map[string]any{"input": "print('again', 1+1)\n", "wait_ms": 10000})
	text += b.untilText(t, b.sess, id, out.Stdout, "again 2\n")
	out = b.typeTo(t, b.sess, id, map[string]any{"input": "import sys; sys.stdout.write('\\x1b[31mred\\x1b[0m\\r\\n')\n", "wait_ms": 10000})
	text += b.untilText(t, b.sess, id, out.Stdout, "red\n")
	out = b.typeTo(t, b.sess, id, map[string]any{"eof": true, "wait_ms": 10000})
	reads := b.until(t, b.sess, id, func(o toolexec.Output) bool { return o.State != "running" })
	end := reads[len(reads)-1]
	assert.Equal(t, "exited", end.State, "%+v", end)
	assert.Equal(t, "terminal", end.Input)
	require.NotNil(t, end.ExitCode)
	// CPython's own code: 130 once a KeyboardInterrupt reached its loop.
	assert.Contains(t, []int{0, 130}, *end.ExitCode)
	text += out.Stdout
	assert.NotContains(t, text, "\r")
	assert.NotContains(t, text, "\x1b")
	assert.Contains(t, text, "\nred\n")
}

// TestReadPromptWithAndWithoutATerminal (issue 38): `read -p 'name? ' n;
// echo hello $n` answers "hello ada" after the input "ada\n", on a
// terminal and on a stdin pipe; only the terminal says it is one, of the
// size asked.
func TestReadPromptWithAndWithoutATerminal(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	for _, c := range []struct {
		name  string
		args  map[string]any
		isTTY string
	}{
		{"terminal", map[string]any{"tty": true, "rows": 30, "cols": 100}, "tty 30 100"},
		{"pipe", map[string]any{"interactive": true}, "no tty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.args["command"] = `if test -t 0 && test -t 1; then echo "tty $(stty size)"; else echo "no tty"; fi; read -p 'name? ' n; echo hello $n`
			id, first := b.interactive(t, b.sess, c.args)
			text := b.untilText(t, b.sess, id, first.Stdout, c.isTTY+"\n")
			out := b.typeTo(t, b.sess, id, map[string]any{"input": "ada\n", "wait_ms": 10000})
			text = b.untilText(t, b.sess, id, text+out.Stdout, "hello ada\n")
			reads := b.until(t, b.sess, id, func(o toolexec.Output) bool { return o.State != "running" })
			assert.Equal(t, "exited", reads[len(reads)-1].State)
			if c.name == "terminal" {
				assert.Contains(t, text, "name? ada\n", "the prompt and the echo")
			}
		})
	}
}

// TestExecInputRefusals (issue 38): bad input is refused with a code and
// sends nothing; a command not started interactive takes no input; one
// that ended refuses more with its end in the result.
func TestExecInputRefusals(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"exec", map[string]any{"command": "true", "rows": 10, "cols": 10}},
		{"exec", map[string]any{"command": "true", "wait_ms": 10}},
		{"exec", map[string]any{"command": "true", "tty": true, "rows": 0}},
		{"exec", map[string]any{"command": "true", "tty": "yes"}},
		{"exec_input", map[string]any{"id": "bg-1", "input": strings.Repeat("x", toolexec.MaxInput+1)}},
		{"exec_input", map[string]any{"id": "bg-1", "rows": 10}},
		{"exec_input", map[string]any{"id": "bg-1", "wait_ms": toolexec.MaxWait.Milliseconds() + 1}},
		{"exec_input", map[string]any{"input": "x"}},
	} {
		res := b.call(t, b.sess, c.tool, c.args)
		assert.True(t, res.IsError, "%s %v: %s", c.tool, c.args, res.Text)
		assert.Equal(t, errcode.InvalidArgument, res.Code, "%s %v: %s", c.tool, c.args, res.Text)
	}
	id := b.start(t, b.sess, "sleep "+marker(1))
	res := b.call(t, b.sess, "exec_input", map[string]any{"id": id, "input": "x\n"})
	assert.Equal(t, toolexec.CodeNotInteractive, res.Code, res.Text)
	b.call(t, b.sess, "exec_kill", map[string]any{"id": id, "signal": "SIGKILL"})

	id, _ = b.interactive(t, b.sess, map[string]any{"command": "head -c 3", "interactive": true})
	out := b.typeTo(t, b.sess, id, map[string]any{"input": "abc", "wait_ms": 10000})
	reads := b.until(t, b.sess, id, func(o toolexec.Output) bool { return o.State != "running" })
	stdout, _ := joined(reads)
	assert.Equal(t, "abc", out.Stdout+stdout)
	res = b.call(t, b.sess, "exec_input", map[string]any{"id": id, "input": "more\n"})
	assert.Equal(t, toolexec.CodeInputRefused, res.Code, res.Text)
	assert.Contains(t, res.Text, "exited with code 0")
	res = b.call(t, b.sess, "exec_input", map[string]any{"id": "bg-99", "input": "x"})
	assert.Equal(t, toolexec.CodeUnknownID, res.Code)
}

// TestInteractiveLeavesNothing (issue 38): 50 terminal sessions started
// and killed leave no process, no descriptor of the server and no
// terminal of the host behind; a program flooding its terminal keeps at
// most the background limit, the rest counted as dropped.
func TestInteractiveLeavesNothing(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	// The session's own (its network namespace, its proxy) come with its
	// first command.
	nets := netNamespaces(t)
	res := b.call(t, b.sess, "exec", map[string]any{"command": "true"})
	require.False(t, res.IsError, res.Text)
	// So does, in the background, the spare namespace the runner makes
	// for the next session once this one took its own (a user and a
	// network namespace and a socket): counted once it is there, or the
	// count would grow by it after the baseline.
	require.Eventually(t, func() bool { return netNamespaces(t) >= nets+2 }, time.Minute, 10*time.Millisecond, "the spare namespace was never made")
	fds := openFDs(t)
	pts := hostTerminals(t)
	m := marker(2)
	for i := range 50 {
		id, _ := b.interactive(t, b.sess, map[string]any{"command": "sleep " + m, "tty": i%2 == 0, "interactive": true, "wait_ms": 0})
		res := b.call(t, b.sess, "exec_kill", map[string]any{"id": id, "signal": "SIGKILL"})
		require.False(t, res.IsError, res.Text)
	}
	assert.Empty(t, sleepers(t, m), "no process left")
	assert.Eventually(t, func() bool { return openFDs(t) <= fds }, 5*time.Second, 50*time.Millisecond, "no descriptor left: %d before, %d after", fds, openFDs(t))
	assert.Equal(t, pts, hostTerminals(t), "no terminal of the host made or left")

	// 5 MB through a terminal: seconds on a quiet machine, over 30 s under
	// the race detector at load 12.
	id, _ := b.interactive(t, b.sess, map[string]any{"command": "yes 0123456789 | head -c 5000000; echo; echo end", "tty": true, "wait_ms": 0})
	reads := b.untilWithin(t, b.sess, id, 3*time.Minute, func(o toolexec.Output) bool { return o.State != "running" })
	var kept, dropped int64
	for _, r := range reads {
		kept += int64(len(r.Stdout))
		dropped += r.StdoutDropped
	}
	assert.LessOrEqual(t, kept, int64(len(reads))*toolexec.BackgroundOutputLimit)
	assert.Equal(t, int64(5000000+len("\nend\n")), kept+dropped, "every byte kept or counted (\\r\\n read as \\n)")
	assert.Contains(t, reads[len(reads)-1].StdoutTail, "end\n")
}

// TestInteractiveIdleEnds (issue 38): an interactive command with no input
// for the idle limit is ended; input keeps it alive. The kept command gets
// a line as often as the calls go until the other has ended, so a loaded
// machine's slow calls cannot starve it (the limit is 3 s; a call takes
// milliseconds on a quiet machine).
func TestInteractiveIdleEnds(t *testing.T) {
	b := newBGWith(t, execsandbox.Config{}, toolexec.Config{InteractiveIdle: 3 * time.Second})
	kept, _ := b.interactive(t, b.sess, map[string]any{"command": "cat", "interactive": true, "wait_ms": 0})
	idle, _ := b.interactive(t, b.sess, map[string]any{"command": "cat", "interactive": true, "wait_ms": 0})
	deadline := time.Now().Add(bgWait)
	var end toolexec.Output
	for {
		b.typeTo(t, b.sess, kept, map[string]any{"input": "x\n", "wait_ms": 0})
		if end = b.read(t, b.sess, idle); end.State != "running" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the command without input was not ended within %s", bgWait)
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, "timed_out", end.State)
	assert.True(t, end.Idle)
	v := b.read(t, b.sess, kept)
	assert.Equal(t, "running", v.State)
	assert.Equal(t, "stdin", v.Input)
}

// openFDs counts the test process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// netNamespaces counts the descriptors of this process that hold a
// network namespace.
func netNamespaces(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "net:[") {
			n++
		}
	}
	return n
}

// hostTerminals lists the host's pseudo-terminals.
func hostTerminals(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/dev/pts")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// sleepers lists the host's processes whose command line holds m.
func sleepers(t *testing.T, m string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), m) && !strings.Contains(string(b), "go test") {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// TestDenialInsideAnInteractiveCommand (issue 38, X-11d): a write outside
// the roots refused inside a running interactive shell, on a terminal or
// with a stdin pipe, is reported with the sandbox's marker when its output
// is read, in a result that is no error (the input was sent, the shell goes
// on); nothing is written outside.
func TestDenialInsideAnInteractiveCommand(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"terminal", map[string]any{"command": "sh -i", "tty": true}},
		{"pipe", map[string]any{"command": "sh", "interactive": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(b.w.outside, c.name)
			id, _ := b.interactive(t, b.sess, c.args)
			res := b.call(t, b.sess, "exec_input", map[string]any{"id": id, "input": "echo x > " + target + "; echo after-$?\n", "wait_ms": 10000})
			require.False(t, res.IsError, res.Text)
			assert.True(t, strings.HasPrefix(res.Text, sandbox.DenialMarker(sandbox.WorkspaceWrite)), res.Text)
			assert.Contains(t, res.Text, target)
			v := res.Value.(toolexec.Output)
			assert.Equal(t, "running", v.State)
			assert.Contains(t, v.Stdout, "after-2")
			assert.NoFileExists(t, target)
			out := b.typeTo(t, b.sess, id, map[string]any{"input": "echo fine\n", "wait_ms": 10000})
			assert.Contains(t, out.Stdout, "fine")
			b.typeTo(t, b.sess, id, map[string]any{"input": "exit 3\n", "wait_ms": 10000})
			reads := b.until(t, b.sess, id, func(o toolexec.Output) bool { return o.State != "running" })
			require.NotNil(t, reads[len(reads)-1].ExitCode)
			assert.Equal(t, 3, *reads[len(reads)-1].ExitCode)
		})
	}
}

// TestNpmInitAnswered (issue 38): npm init, without -y, on a terminal,
// completes through its questions answered one by one (a name typed, the
// rest their defaults), with the registry denied, and writes the
// package.json it showed.
func TestNpmInitAnswered(t *testing.T) {
	npm, err := osexec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed (Node 20 and npm: apt-get install nodejs npm)")
	}
	b := newBG(t, execsandbox.Config{})
	id, first := b.interactive(t, b.sess, map[string]any{"command": npm + " init", "tty": true, "wait_ms": 10000})
	screen := b.untilText(t, b.sess, id, first.Stdout, "package name:")
	out := b.typeTo(t, b.sess, id, map[string]any{"input": "answered-pkg\n", "wait_ms": 5000})
	screen += out.Stdout
	screen = b.untilText(t, b.sess, id, screen, "version:")
	// The rest of the questions (their number differs between npm
	// versions) take their defaults, one answer each.
	for i := 0; !strings.Contains(screen, "Is this OK?"); i++ {
		require.Less(t, i, 20, "npm init asked no confirmation: %s", screen)
		out = b.typeTo(t, b.sess, id, map[string]any{"input": "\n", "wait_ms": 5000})
		screen += out.Stdout
	}
	for _, q := range []string{"description:", "entry point:", "test command:", "git repository:", "keywords:", "author:", "license:"} {
		assert.Contains(t, screen, q)
	}
	b.typeTo(t, b.sess, id, map[string]any{"input": "yes\n", "wait_ms": 10000})
	reads := b.until(t, b.sess, id, func(o toolexec.Output) bool { return o.State != "running" })
	end := reads[len(reads)-1]
	require.NotNil(t, end.ExitCode, "%+v", end)
	assert.Equal(t, 0, *end.ExitCode, "%s%+v", screen, end)
	raw, err := os.ReadFile(filepath.Join(b.w.ws, "package.json"))
	require.NoError(t, err, screen)
	var pkg map[string]any
	require.NoError(t, json.Unmarshal(raw, &pkg))
	assert.Equal(t, "answered-pkg", pkg["name"])
	assert.Equal(t, "1.0.0", pkg["version"])
	assert.Equal(t, "ISC", pkg["license"])
}

// TestInteractiveIdleWhileStarting (issue 38): the idle limit passing while
// the command is still starting (a loaded machine: CI saw "failed") ends it
// as timed_out by idleness, not as a failed start.
func TestInteractiveIdleWhileStarting(t *testing.T) {
	b := newBGWith(t, execsandbox.Config{}, toolexec.Config{InteractiveIdle: time.Millisecond})
	id, _ := b.interactive(t, b.sess, map[string]any{"command": "cat", "interactive": true, "wait_ms": 0})
	reads := b.until(t, b.sess, id, func(o toolexec.Output) bool { return o.State != "running" })
	end := reads[len(reads)-1]
	assert.Equal(t, "timed_out", end.State, end.Error)
	assert.True(t, end.Idle)
	assert.Empty(t, end.Error)
}

package toolexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// bgWait bounds each wait for a background command to reach a state.
const bgWait = 30 * time.Second

// bg is the command tools over the real confining runner (bubblewrap) in a
// workspace-write world, with a session started by a tracker.
type bg struct {
	w       *world
	tracker *session.Tracker
	sess    *session.Session
	tl      *toolexec.Tool
	tools   map[string]*tool.Tool
}

func newBG(t *testing.T, cfg execsandbox.Config) *bg {
	t.Helper()
	return newBGWith(t, cfg, toolexec.Config{})
}

// newBGWith is newBG with the tool's config tcfg.
func newBGWith(t *testing.T, cfg execsandbox.Config, tcfg toolexec.Config) *bg {
	t.Helper()
	requireLandlock(t)
	w := newWorld(t, sandbox.WorkspaceWrite)
	r, err := execsandbox.New(cfg, exec.Config{}, w.pol)
	require.NoError(t, err)
	tl, err := toolexec.New(tcfg, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tl.Close(context.Background())) })
	b := &bg{w: w, tracker: session.NewTracker(), tl: tl, tools: map[string]*tool.Tool{}}
	b.sess = b.tracker.Start("s", w.ws)
	for _, x := range tl.All() {
		b.tools[x.Name] = x
	}
	return b
}

func (b *bg) call(t *testing.T, sess *session.Session, name string, args map[string]any) tool.Result {
	t.Helper()
	return call(t, b.tools[name], sess, args)
}

// start starts command in the background and returns its id.
func (b *bg) start(t *testing.T, sess *session.Session, command string) string {
	t.Helper()
	res := b.call(t, sess, "exec", map[string]any{"command": command, "background": true})
	require.False(t, res.IsError, res.Text)
	v, ok := res.Value.(toolexec.Started)
	require.True(t, ok, "a background start returns Started, got %T", res.Value)
	require.True(t, v.Background)
	require.NotEmpty(t, v.ID)
	return v.ID
}

func (b *bg) read(t *testing.T, sess *session.Session, id string) toolexec.Output {
	t.Helper()
	res := b.call(t, sess, "exec_output", map[string]any{"id": id})
	require.False(t, res.IsError, res.Text)
	return res.Value.(toolexec.Output)
}

// until reads id until cond holds for a read, and returns every read up to
// and including that one.
func (b *bg) until(t *testing.T, sess *session.Session, id string, cond func(toolexec.Output) bool) []toolexec.Output {
	t.Helper()
	return b.untilWithin(t, sess, id, bgWait, cond)
}

// untilWithin is until with a wait of its own.
func (b *bg) untilWithin(t *testing.T, sess *session.Session, id string, wait time.Duration, cond func(toolexec.Output) bool) []toolexec.Output {
	t.Helper()
	deadline := time.Now().Add(wait)
	var reads []toolexec.Output
	for {
		v := b.read(t, sess, id)
		reads = append(reads, v)
		if cond(v) {
			return reads
		}
		require.True(t, time.Now().Before(deadline), "the condition did not hold within %s; last read %+v", wait, v)
		time.Sleep(20 * time.Millisecond)
	}
}

func joined(reads []toolexec.Output) (stdout, stderr string) {
	for _, r := range reads {
		stdout += r.Stdout
		stderr += r.Stderr
	}
	return stdout, stderr
}

// marker is a sleep duration no other process uses, naming a test's
// sleepers on the host whatever PID namespace they run in.
func marker(n int) string { return fmt.Sprintf("900.%d%d", os.Getpid(), n) }

// TestBackgroundCommand: exec with background returns its id while the
// command still runs (it waits for a file the test makes only after the
// return); exec_output then gives exactly the bytes written since the last
// read, the state running, and at the end the exit code; the ended command
// stays, with its output's tail, once that last read is done.
func TestBackgroundCommand(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	gate := filepath.Join(b.w.ws, "go")
	id := b.start(t, b.sess, `printf 'first\n'; while [ ! -e go ]; do sleep 0.02; done; printf 'second\n'; printf 'oops' >&2; exit 3`)
	reads := b.until(t, b.sess, id, func(v toolexec.Output) bool { return v.Stdout != "" })
	for _, r := range reads {
		assert.Equal(t, "running", r.State, "the command waits for the gate")
		assert.Nil(t, r.ExitCode)
	}
	out, _ := joined(reads)
	assert.Equal(t, "first\n", out)
	again := b.read(t, b.sess, id)
	assert.Empty(t, again.Stdout, "output already read is not given again")

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	reads = b.until(t, b.sess, id, func(v toolexec.Output) bool { return v.State != "running" })
	last := reads[len(reads)-1]
	assert.Equal(t, "exited", last.State)
	require.NotNil(t, last.ExitCode)
	assert.Equal(t, 3, *last.ExitCode)
	out, errs := joined(reads)
	assert.Equal(t, "second\n", out, "the rest of stdout, byte for byte")
	assert.Equal(t, "oops", errs)
	assert.Equal(t, id, last.ID)
	assert.Equal(t, b.w.ws, last.Workdir)

	again = b.read(t, b.sess, id)
	assert.Equal(t, "exited", again.State, "an ended command read to its end stays")
	assert.Empty(t, again.Stdout, "output already read is not given again")
	assert.Equal(t, "first\nsecond\n", again.StdoutTail)
	assert.Equal(t, "oops", again.StderrTail)
}

// TestBackgroundList: exec_output without id lists the session's
// background commands with id, command, state and start; another session
// sees none of them and cannot read or kill them by id.
func TestBackgroundList(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	m := marker(1)
	id := b.start(t, b.sess, "exec sleep "+m)
	res := b.call(t, b.sess, "exec_output", map[string]any{})
	require.False(t, res.IsError, res.Text)
	list := res.Value.(toolexec.Listing).Commands
	require.Len(t, list, 1)
	assert.Equal(t, id, list[0].ID)
	assert.Equal(t, "exec sleep "+m, list[0].Command)
	assert.Equal(t, "running", list[0].State)
	_, err := time.Parse(time.RFC3339Nano, list[0].Started)
	assert.NoError(t, err)
	assert.Contains(t, res.Text, id+" running")

	require.Eventually(t, func() bool { return len(processesWith("sleep\x00"+m)) == 1 }, bgWait, 20*time.Millisecond)
	other := b.tracker.Start("other", b.w.ws)
	res = b.call(t, other, "exec_output", map[string]any{})
	require.False(t, res.IsError, res.Text)
	assert.Empty(t, res.Value.(toolexec.Listing).Commands)
	for _, name := range []string{"exec_output", "exec_kill"} {
		res = b.call(t, other, name, map[string]any{"id": id})
		require.True(t, res.IsError, name)
		assert.EqualValues(t, toolexec.CodeUnknownID, res.Code, name)
	}
	assert.NotEmpty(t, processesWith("sleep\x00"+m), "another session's kill did nothing")
}

// TestBackgroundKill: exec_kill ends the command and every process of its
// tree, setsid ones included: by SIGTERM by default, and by SIGKILL after
// the grace when the tree ignores SIGTERM. The tree is gone when it
// returns.
func TestBackgroundKill(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	cases := []struct {
		name, prefix, signal, ended string
	}{
		{"SIGTERM ends it", "", "", "SIGTERM"},
		{"a tree ignoring SIGTERM is killed after the grace", "trap '' TERM; ", "", "SIGKILL"},
		{"SIGKILL at once", "", "SIGKILL", "SIGKILL"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := marker(10 + i)
			started := filepath.Join(b.w.ws, "started-"+strconv.Itoa(i))
			id := b.start(t, b.sess, tc.prefix+`setsid sleep `+m+` & sleep `+m+` & echo up > `+started+`; wait`)
			b.until(t, b.sess, id, func(toolexec.Output) bool { _, err := os.Stat(started); return err == nil })
			require.Eventually(t, func() bool { return len(processesWith("sleep\x00"+m)) == 2 }, bgWait, 20*time.Millisecond)
			args := map[string]any{"id": id}
			if tc.signal != "" {
				args["signal"] = tc.signal
			}
			res := b.call(t, b.sess, "exec_kill", args)
			require.False(t, res.IsError, res.Text)
			v := res.Value.(toolexec.Output)
			assert.Equal(t, "killed", v.State)
			assert.Equal(t, tc.ended, v.Signal)
			assert.Empty(t, processesWith("sleep\x00"+m), "a process of the tree survived exec_kill")
		})
	}
	res := b.call(t, b.sess, "exec_kill", map[string]any{"id": "bg-1", "signal": "SIGSTOP"})
	require.True(t, res.IsError)
	assert.Contains(t, res.Text, "signal must be one of")
}

// TestBackgroundCap: a session runs at most MaxBackground background
// commands; one more is refused with a code, and admitted once one ends.
func TestBackgroundCap(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	m := marker(20)
	var ids []string
	for range toolexec.MaxBackground {
		ids = append(ids, b.start(t, b.sess, "exec sleep "+m))
	}
	res := b.call(t, b.sess, "exec", map[string]any{"command": "exec sleep " + m, "background": true})
	require.True(t, res.IsError)
	assert.EqualValues(t, toolexec.CodeBackgroundLimit, res.Code)
	assert.Contains(t, res.Text, strconv.Itoa(toolexec.MaxBackground)+" background commands")
	res = b.call(t, b.sess, "exec_kill", map[string]any{"id": ids[0], "signal": "SIGKILL"})
	require.False(t, res.IsError, res.Text)
	b.start(t, b.sess, "exec sleep "+m)
}

// TestBackgroundOutputIsBounded: a background command keeps the last
// BackgroundOutputLimit bytes of a stream between reads and says how many
// it dropped.
func TestBackgroundOutputIsBounded(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	const n = 3_000_000
	id := b.start(t, b.sess, fmt.Sprintf(`head -c %d /dev/zero | tr '\0' a; printf END`, n))
	// Nothing is read before it ends: the first read after that gets the
	// whole kept tail.
	require.Eventually(t, func() bool {
		res := b.call(t, b.sess, "exec_output", map[string]any{})
		l := res.Value.(toolexec.Listing).Commands
		return len(l) == 1 && l[0].State != "running"
	}, bgWait, 20*time.Millisecond)
	v := b.read(t, b.sess, id)
	assert.Equal(t, "exited", v.State)
	require.Len(t, v.Stdout, toolexec.BackgroundOutputLimit)
	assert.Equal(t, strings.Repeat("a", toolexec.BackgroundOutputLimit-3)+"END", v.Stdout)
	assert.EqualValues(t, n+3-toolexec.BackgroundOutputLimit, v.StdoutDropped)
}

// TestBackgroundEndsWithTheSession: ending the session kills every
// background command of it (nothing left running) and forgets them; another
// session's keep running.
func TestBackgroundEndsWithTheSession(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	mine, theirs := marker(30), marker(31)
	other := b.tracker.Start("other", b.w.ws)
	id := b.start(t, b.sess, "sleep "+mine+" & setsid sleep "+mine+" & wait")
	b.start(t, b.sess, "exec sleep "+mine)
	b.start(t, other, "exec sleep "+theirs)
	require.Eventually(t, func() bool {
		return len(processesWith("sleep\x00"+mine)) == 3 && len(processesWith("sleep\x00"+theirs)) == 1
	}, bgWait, 20*time.Millisecond)
	b.tracker.End(b.sess)
	require.Eventually(t, func() bool { return len(processesWith("sleep\x00"+mine)) == 0 }, bgWait, 20*time.Millisecond,
		"a background command outlived its session")
	res := b.call(t, b.sess, "exec_output", map[string]any{"id": id})
	assert.EqualValues(t, toolexec.CodeUnknownID, res.Code)
	assert.NotEmpty(t, processesWith("sleep\x00"+theirs), "another session's command was killed")
}

// TestBackgroundEndsWithTheServer: Close kills every session's background
// commands and returns once they are gone; later starts are refused.
func TestBackgroundEndsWithTheServer(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	m := marker(40)
	other := b.tracker.Start("other", b.w.ws)
	b.start(t, b.sess, "setsid sleep "+m+" & wait")
	b.start(t, other, "exec sleep "+m)
	require.Eventually(t, func() bool { return len(processesWith("sleep\x00"+m)) == 2 }, bgWait, 20*time.Millisecond)
	require.NoError(t, b.tl.Close(context.Background()))
	assert.Empty(t, processesWith("sleep\x00"+m), "a background command outlived the server's stop")
	res := b.call(t, b.sess, "exec", map[string]any{"command": "true", "background": true})
	require.True(t, res.IsError)
	assert.EqualValues(t, toolexec.CodeBackgroundLimit, res.Code)
}

// TestBackgroundServerAnswersLaterCommands: a server started in the
// background on 127.0.0.1 answers a later command of the same session, and
// its log shows the request. Under --network allow (the host's loopback) and
// under deny (the session's own loopback-only network namespace, shared by
// its commands).
func TestBackgroundServerAnswersLaterCommands(t *testing.T) {
	if _, err := osexec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: it serves and fetches here")
	}
	for _, network := range []bool{true, false} {
		t.Run("network="+strconv.FormatBool(network), func(t *testing.T) {
			b := newBG(t, execsandbox.Config{Network: network})
			port := freePort(t)
			require.NoError(t, os.WriteFile(filepath.Join(b.w.ws, "index.html"), []byte("hello from the background\n"), 0o644))
			id := b.start(t, b.sess, "exec python3 -u -m http.server --bind 127.0.0.1 "+port)
			b.until(t, b.sess, id, func(v toolexec.Output) bool {
				require.Equal(t, "running", v.State, "the server ended: %s", v.Stderr)
				return strings.Contains(v.Stdout+v.Stderr, "Serving HTTP")
			})
			res := b.call(t, b.sess, "exec", map[string]any{"command": `python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:` + port + `/index.html").read().decode())'`})
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, "hello from the background\n", res.Value.(toolexec.Value).Stdout, res.Text)
			served := b.until(t, b.sess, id, func(v toolexec.Output) bool { return strings.Contains(v.Stderr, "GET /index.html") })
			assert.Equal(t, "running", served[len(served)-1].State)
			res = b.call(t, b.sess, "exec_kill", map[string]any{"id": id})
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, "killed", res.Value.(toolexec.Output).State)
		})
	}
}

// freePort returns a loopback TCP port free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	return port
}

// TestExecProgress: a call with a Progress gets a report every
// ProgressEvery while its command runs: seconds so far, and a message with
// the output so far; a call's last report comes before its result.
func TestExecProgress(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl := w.tool(t, false, sandbox.Rejected)
	type rep struct {
		done float64
		msg  string
	}
	reports := make(chan rep, 16)
	gate := filepath.Join(w.ws, "go")
	raw := []byte(`{"command":"printf 'line one\\nhalf'; while [ ! -e go ]; do sleep 0.02; done; echo done"}`)
	results := make(chan tool.Result, 1)
	go func() {
		results <- tl.Handler(session.NewContext(t.Context(), w.sess), tool.Call{
			ID: "1", Arguments: raw,
			Progress: func(done, total float64, msg string) { reports <- rep{done, msg} },
		})
	}()
	var first rep
	select {
	case first = <-reports:
	case <-time.After(toolexec.ProgressEvery + bgWait):
		t.Fatal("no progress report")
	}
	assert.GreaterOrEqual(t, first.done, toolexec.ProgressEvery.Seconds()-1)
	assert.Contains(t, first.msg, "running for ")
	assert.True(t, strings.HasSuffix(first.msg, "output so far ends with:\nhalf"), "the message ends with the output's last line: %q", first.msg)
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	res := <-results
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "line one\nhalfdone\n", res.Value.(toolexec.Value).Stdout)
	close(reports)
	for r := range reports {
		assert.Greater(t, r.done, first.done, "done increases")
	}
}

// TestExecWaitsIdle: a call waiting for a command slot, and one whose
// command runs, is inside the call's Idle (holding no front-end call slot);
// each leaves it before returning.
func TestExecWaitsIdle(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	tl, err := toolexec.New(toolexec.Config{MaxConcurrent: 1}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	idle := make(chan int, 16) // +1 entering, -1 leaving
	raw := []byte(`{"command":"while [ ! -e go ]; do sleep 0.02; done"}`)
	results := make(chan tool.Result, 3)
	for range 3 {
		go func() {
			results <- tl.Exec().Handler(session.NewContext(t.Context(), w.sess), tool.Call{
				ID: "1", Arguments: raw,
				Idle: func(_ context.Context, wait func()) { idle <- 1; wait(); idle <- -1 },
			})
		}()
	}
	inside := 0
	for inside < 3 {
		select {
		case d := <-idle:
			inside += d
		case res := <-results:
			t.Fatalf("a call returned before the gate opened: %s", res.Text)
		case <-time.After(bgWait):
			t.Fatal("the calls did not all wait idle: one running, two queued for its slot")
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, "go"), nil, 0o644))
	for range 3 {
		res := <-results
		assert.False(t, res.IsError, res.Text)
	}
	for range 3 {
		assert.Equal(t, -1, <-idle)
	}
}

// TestBackgroundTimeout: a background command runs with no timeout unless
// timeout_ms is given; with one, its tree is killed when it passes and it
// reads as timed_out.
func TestBackgroundTimeout(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	m := marker(60)
	res := b.call(t, b.sess, "exec", map[string]any{"command": "setsid sleep " + m + " & exec sleep " + m, "background": true, "timeout_ms": 500})
	require.False(t, res.IsError, res.Text)
	id := res.Value.(toolexec.Started).ID
	reads := b.until(t, b.sess, id, func(v toolexec.Output) bool { return v.State != "running" })
	assert.Equal(t, "timed_out", reads[len(reads)-1].State)
	assert.Empty(t, processesWith("sleep\x00"+m), "a process outlived the timeout")
}

// TestBackgroundGitStateDisarmed (issue 35): a background command that
// leaves an exec line in a rebase todo has it disarmed when it ends, on
// disk, and exec_output's last read carries the sandbox's marker naming the
// file; a foreground command's result is the denial, whatever its exit.
func TestBackgroundGitStateDisarmed(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	b := newBG(t, execsandbox.Config{})
	out, err := osexec.Command("git", "init", "-q", b.w.ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	todo := filepath.Join(b.w.ws, ".git/rebase-merge/git-rebase-todo")
	id := b.start(t, b.sess, "mkdir -p .git/rebase-merge && printf 'exec touch pwned\\n' > .git/rebase-merge/git-rebase-todo")
	var last tool.Result
	deadline := time.Now().Add(bgWait)
	for {
		last = b.call(t, b.sess, "exec_output", map[string]any{"id": id})
		require.False(t, last.IsError, last.Text)
		if last.Value.(toolexec.Output).State != "running" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the command did not end within %s", bgWait)
		time.Sleep(20 * time.Millisecond)
	}
	assert.Contains(t, last.Text, sandbox.DenialMarker(sandbox.WorkspaceWrite))
	assert.Contains(t, last.Text, strconv.Quote(todo)+": the rebase todo's exec lines (\"exec touch pwned\"): its exec lines were made comments")
	b2, err := os.ReadFile(todo)
	require.NoError(t, err)
	assert.Equal(t, "# disarmed by harness: exec touch pwned\n", string(b2))

	res := b.call(t, b.sess, "exec", map[string]any{"command": "printf 'x  make\\n' >> .git/rebase-merge/git-rebase-todo"})
	assert.True(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, sandbox.DenialMarker(sandbox.WorkspaceWrite))
	assert.Contains(t, res.Text, "exit code 0", "the command's own exit is kept")
	b2, err = os.ReadFile(todo)
	require.NoError(t, err)
	assert.Equal(t, "# disarmed by harness: exec touch pwned\n# disarmed by harness: x  make\n", string(b2))
}

// asJSON returns v as a client reads it: its JSON object, without the
// fields that vary with the clock (started, duration_ms; also in each
// listed command), checked to be there first.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	strip := func(o map[string]any) {
		for _, k := range []string{"started", "duration_ms"} {
			require.Contains(t, o, k)
			delete(o, k)
		}
	}
	if cmds, ok := m["commands"].([]any); ok {
		for _, c := range cmds {
			strip(c.(map[string]any))
		}
		return m
	}
	strip(m)
	return m
}

// validates checks v against the tool's declared output schema.
func validates(t *testing.T, tl *tool.Tool, v any) {
	t.Helper()
	resolved, err := tl.OutputSchema.Resolve(nil)
	require.NoError(t, err)
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var inst any
	require.NoError(t, json.Unmarshal(raw, &inst))
	require.NoError(t, resolved.Validate(inst), "%s's result against its output schema: %s", tl.Name, raw)
}

// TestBackgroundEndedStaysListed (issue 36): an ended command, killed or
// exited, and read to its end, stays for exec_output with its final state
// and its output's tail; the listing has its own shape (no single
// command's blank fields); every result validates against its tool's
// declared output schema; the session keeps the last MaxEnded ended ones,
// the oldest dropped.
func TestBackgroundEndedStaysListed(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	m := marker(40)
	killed := b.start(t, b.sess, "echo up; echo warn >&2; exec sleep "+m)
	b.until(t, b.sess, killed, func(v toolexec.Output) bool { return v.Stdout != "" })
	res := b.call(t, b.sess, "exec_kill", map[string]any{"id": killed, "signal": "SIGKILL"})
	require.False(t, res.IsError, res.Text)
	validates(t, b.tools["exec_kill"], res.Value)
	wantKilled := map[string]any{
		"id": killed, "command": "echo up; echo warn >&2; exec sleep " + m, "workdir": b.w.ws, "state": "killed",
		"exit_code": -1.0, "signal": "SIGKILL", "stdout_tail": "up\n", "stderr_tail": "warn\n",
	}
	got := asJSON(t, res.Value)
	delete(got, "stderr") // the kill's read may or may not be the first to see "warn"
	assert.Equal(t, wantKilled, got)

	exited := b.start(t, b.sess, "echo done; exit 3")
	b.until(t, b.sess, exited, func(v toolexec.Output) bool { return v.State != "running" })
	wantExited := map[string]any{
		"id": exited, "command": "echo done; exit 3", "workdir": b.w.ws, "state": "exited",
		"exit_code": 3.0, "stdout_tail": "done\n",
	}
	for range 2 {
		res = b.call(t, b.sess, "exec_output", map[string]any{"id": killed})
		require.False(t, res.IsError, "exec_output after exec_kill: %s", res.Text)
		validates(t, b.tools["exec_output"], res.Value)
		assert.Equal(t, wantKilled, asJSON(t, res.Value))
		res = b.call(t, b.sess, "exec_output", map[string]any{"id": exited})
		require.False(t, res.IsError, "exec_output after the end was read: %s", res.Text)
		validates(t, b.tools["exec_output"], res.Value)
		assert.Equal(t, wantExited, asJSON(t, res.Value))
	}
	res = b.call(t, b.sess, "exec_kill", map[string]any{"id": exited})
	require.False(t, res.IsError, "exec_kill of an ended command reports its end: %s", res.Text)
	assert.Equal(t, wantExited, asJSON(t, res.Value))

	res = b.call(t, b.sess, "exec_output", map[string]any{})
	require.False(t, res.IsError, res.Text)
	validates(t, b.tools["exec_output"], res.Value)
	assert.Equal(t, map[string]any{"commands": []any{wantKilled, wantExited}}, asJSON(t, res.Value))

	// Past MaxEnded ended commands, a start drops the oldest ended ones.
	var ids []string
	for i := range toolexec.MaxEnded {
		id := b.start(t, b.sess, "exit "+strconv.Itoa(i))
		b.until(t, b.sess, id, func(v toolexec.Output) bool { return v.State != "running" })
		ids = append(ids, id)
	}
	res = b.call(t, b.sess, "exec_output", map[string]any{})
	var listed []string
	for _, j := range res.Value.(toolexec.Listing).Commands {
		listed = append(listed, j.ID)
	}
	assert.Equal(t, ids, listed, "the last MaxEnded ended commands, oldest first")
	for _, id := range []string{killed, exited} {
		res = b.call(t, b.sess, "exec_output", map[string]any{"id": id})
		assert.EqualValues(t, toolexec.CodeUnknownID, res.Code, res.Text)
	}
}

// TestBackgroundSchemas: exec_kill declares the single command's shape
// only; exec_output is one of that and the listing, which a single
// command's result and a listing each match, and nothing else does.
func TestBackgroundSchemas(t *testing.T) {
	b := newBG(t, execsandbox.Config{})
	kill, output := b.tools["exec_kill"].OutputSchema, b.tools["exec_output"].OutputSchema
	assert.Equal(t, "object", kill.Type)
	assert.NotContains(t, kill.Properties, "commands")
	assert.Subset(t, kill.Required, []string{"id", "command", "workdir", "state", "started", "duration_ms"})
	assert.Equal(t, "object", output.Type)
	require.Len(t, output.OneOf, 2)
	resolved, err := output.Resolve(nil)
	require.NoError(t, err)
	single := map[string]any{"id": "bg-1", "command": "true", "workdir": "/w", "state": "running", "started": "x", "duration_ms": 1}
	assert.NoError(t, resolved.Validate(single))
	assert.NoError(t, resolved.Validate(map[string]any{"commands": []any{single}}))
	assert.Error(t, resolved.Validate(map[string]any{"commands": []any{}, "id": "", "state": ""}), "a listing with blank single-command fields")
	assert.Error(t, resolved.Validate(map[string]any{"state": ""}))
}

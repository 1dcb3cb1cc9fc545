package toolexec_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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

// callAs calls tl in sess as principal.
func callAs(t *testing.T, tl *tool.Tool, sess *session.Session, principal string, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Handler(session.NewContext(t.Context(), sess), tool.Call{ID: "1", Principal: principal, Arguments: raw})
}

// lines returns the lines of the file at p ("" when it does not exist).
func lines(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// TestCommandsAreSharedBetweenPrincipals (issue 35): with 4 command slots
// and 2 a principal, alice's four long commands run two at a time and
// bob's echo runs at once beside them (it would wait for one of alice's to
// end if she held every slot); once alice's release, her other two run,
// and all five end with exit 0.
func TestCommandsAreSharedBetweenPrincipals(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	tl, err := toolexec.New(toolexec.Config{MaxConcurrent: 4, PrincipalMaxConcurrent: 2}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tl.Close(context.Background())) })
	alice1, alice2 := session.New("alice-1", w.ws), session.New("alice-2", w.ws)
	started := filepath.Join(w.ws, "started")
	results := make(chan tool.Result, 4)
	for i := range 4 {
		sess := alice1
		if i%2 == 1 {
			sess = alice2
		}
		go func() {
			results <- callAs(t, tl.Exec(), sess, "alice", map[string]any{"command": "echo alice >> started; while [ ! -e go ]; do sleep 0.01; done"})
		}()
	}
	require.Eventually(t, func() bool { return lines(t, started) == "alice\nalice\n" }, bgWait, 10*time.Millisecond, "two of alice's commands run")

	res := callAs(t, tl.Exec(), session.New("bob-1", w.ws), "bob", map[string]any{"command": "echo hi"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "hi\n", res.Value.(toolexec.Value).Stdout, "bob's command ran while alice's held their slots")
	assert.Equal(t, "alice\nalice\n", lines(t, started), "alice's other two wait behind her cap though two slots are free")

	require.NoError(t, os.WriteFile(filepath.Join(w.ws, "go"), nil, 0o644))
	for range 4 {
		res := <-results
		require.False(t, res.IsError, res.Text)
		assert.EqualValues(t, 0, res.Value.(toolexec.Value).ExitCode, res.Text)
	}
	assert.Equal(t, "alice\nalice\nalice\nalice\n", lines(t, started))
}

// TestPrincipalCapsInAll (issue 35): a principal's background commands over
// all its sessions, and the memory and process caps of all its running
// commands, are capped in all: the command that would pass a cap is refused
// with EXEC_PRINCIPAL_LIMIT naming the cap and its flag, and does not run
// (its file is never made); another principal is not held to it; once one
// of the principal's commands ends, it may start one again.
func TestPrincipalCapsInAll(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  toolexec.Config
		flag string
	}{
		{"background commands", toolexec.Config{PrincipalMaxBackground: 3}, "--principal-max-background"},
		// Each command's caps are 64 MiB and 32 processes.
		{"memory", toolexec.Config{PrincipalMemory: 3 * 64 << 20}, "--principal-exec-memory"},
		{"processes", toolexec.Config{PrincipalPids: 3 * 32}, "--principal-exec-pids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireLandlock(t)
			w := newWorld(t, sandbox.WorkspaceWrite)
			r, err := execsandbox.New(execsandbox.Config{Memory: 64 << 20, Pids: 32}, exec.Config{}, w.pol)
			require.NoError(t, err)
			tl, err := toolexec.New(tc.cfg, toolexec.Deps{Runner: r, Policy: w.pol})
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, tl.Close(context.Background())) })
			tools := map[string]*tool.Tool{}
			for _, x := range tl.All() {
				tools[x.Name] = x
			}
			tracker := session.NewTracker()
			s1, s2, bob := tracker.Start("a1", w.ws), tracker.Start("a2", w.ws), tracker.Start("b1", w.ws)
			start := func(sess *session.Session, principal string, n int) tool.Result {
				return callAs(t, tools["exec"], sess, principal, map[string]any{
					"command": "touch ran-" + principal + "-" + strconv.Itoa(n) + "; sleep 600", "background": true,
				})
			}
			var ids []string
			for i, sess := range []*session.Session{s1, s1, s2} {
				res := start(sess, "alice", i)
				require.False(t, res.IsError, res.Text)
				ids = append(ids, res.Value.(toolexec.Started).ID)
			}
			res := start(s2, "alice", 3)
			require.True(t, res.IsError, "the fourth of alice's commands passes her cap: %s", res.Text)
			assert.Equal(t, toolexec.CodePrincipalLimit, res.Code)
			assert.Contains(t, res.Text, `principal "alice"`)
			assert.Contains(t, res.Text, tc.flag, "the refusal names the cap's flag")

			// A foreground command counts toward memory and processes too.
			fg := callAs(t, tools["exec"], s2, "alice", map[string]any{"command": "touch ran-alice-fg"})
			if tc.name == "background commands" {
				assert.False(t, fg.IsError, fg.Text)
			} else {
				assert.Equal(t, toolexec.CodePrincipalLimit, fg.Code, fg.Text)
			}

			res = start(bob, "bob", 0)
			require.False(t, res.IsError, "bob is not held to alice's caps: %s", res.Text)

			started := func(name, id string, sess *session.Session, principal string) {
				t.Helper()
				if !assert.Eventually(t, func() bool {
					_, err := os.Stat(filepath.Join(w.ws, name))
					return err == nil
				}, bgWait, 10*time.Millisecond, "%s started", name) {
					out := callAs(t, tools["exec_output"], sess, principal, map[string]any{"id": id})
					t.Fatalf("%s: %s", id, out.Text)
				}
			}
			started("ran-bob-0", res.Value.(toolexec.Started).ID, bob, "bob")
			for i, sess := range []*session.Session{s1, s1, s2} {
				started("ran-alice-"+strconv.Itoa(i), ids[i], sess, "alice")
			}
			kill := callAs(t, tools["exec_kill"], s2, "alice", map[string]any{"id": ids[2], "signal": "SIGKILL"})
			require.False(t, kill.IsError, kill.Text)
			res = start(s2, "alice", 4)
			require.False(t, res.IsError, "one of alice's ended: she may start another: %s", res.Text)

			started("ran-alice-4", res.Value.(toolexec.Started).ID, s2, "alice")
			assert.NoFileExists(t, filepath.Join(w.ws, "ran-alice-3"), "the refused command never ran")
			if tc.name != "background commands" {
				assert.NoFileExists(t, filepath.Join(w.ws, "ran-alice-fg"), "the refused command never ran")
			}
			for _, s := range []*session.Session{s1, s2, bob} {
				tracker.End(s)
			}
		})
	}
}

// TestProgressWhileWaitingCountsThePrincipalsCommands: a command waiting
// for a slot reports, every ProgressEvery, that it waits and how many of
// its principal's commands wait (itself included).
func TestProgressWhileWaitingCountsThePrincipalsCommands(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	tl, err := toolexec.New(toolexec.Config{MaxConcurrent: 1}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tl.Close(context.Background())) })
	results := make(chan tool.Result, 2)
	go func() {
		results <- callAs(t, tl.Exec(), w.sess, "alice", map[string]any{"command": "echo x > started; while [ ! -e go ]; do sleep 0.02; done"})
	}()
	require.Eventually(t, func() bool { return lines(t, filepath.Join(w.ws, "started")) == "x\n" }, bgWait, 10*time.Millisecond)
	reports := make(chan string, 16)
	go func() {
		raw, _ := json.Marshal(map[string]any{"command": "echo second"})
		results <- tl.Exec().Handler(session.NewContext(t.Context(), w.sess), tool.Call{
			ID: "2", Principal: "alice", Arguments: raw,
			Progress: func(_, _ float64, msg string) { reports <- msg },
		})
	}()
	select {
	case msg := <-reports:
		assert.Regexp(t, `^waiting for a free command slot \([0-9]+s; 1 of this principal's commands waiting\)$`, msg)
	case <-time.After(toolexec.ProgressEvery + bgWait):
		t.Fatal("no progress report")
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, "go"), nil, 0o644))
	for range 2 {
		res := <-results
		require.False(t, res.IsError, res.Text)
	}
}

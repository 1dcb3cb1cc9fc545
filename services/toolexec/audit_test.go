package toolexec_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/errcode"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// auSink keeps every record it is handed, in order.
type auSink struct {
	mu      sync.Mutex
	records []audit.Record
}

func (s *auSink) Append(r audit.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
}

// last returns the one record handed since the previous call of last, and
// asserts that it holds none of secrets.
func (s *auSink) last(t *testing.T, secrets ...string) audit.Record {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.records, 1, "one record per call")
	r := s.records[0]
	s.records = nil
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	for _, secret := range secrets {
		assert.NotContains(t, string(raw), secret, "no output or secret in the record")
	}
	return r
}

// audited returns the command tools over a confining runner of pol
// (options: cfg), recording into a sink.
func audited(t *testing.T, pol *sandboxpolicy.Service, cfg execsandbox.Config) (*toolexec.Tool, *auSink) {
	t.Helper()
	requireLandlock(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	r, err := execsandbox.New(cfg, hexec.Config{}, pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	sink := &auSink{}
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: pol, Sink: sink})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tl.Close(t.Context()) })
	return tl, sink
}

// auCall runs tl as call 9 of sess, the call's approver answering answer
// ("" for no approver).
func auCall(t *testing.T, tl *tool.Tool, sess *session.Session, answer sandbox.Outcome, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	c := tool.Call{ID: "9", Client: "test-client 2.0", Arguments: raw}
	if answer != "" {
		c.Approver = sandbox.ApproverFunc(func(_ context.Context, _ sandbox.ApprovalRequest) (sandbox.Outcome, error) { return answer, nil })
	}
	return tl.Handler(session.NewContext(t.Context(), sess), c)
}

func intp(i int) *int { return &i }

// TestAuditRecordsCommands runs commands through the guard and reads each
// call's record back: the command line, workdir, exit, output sizes (never
// the output), denials inferred, and that the journal does not keep what
// a command changed.
func TestAuditRecordsCommands(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl, sink := audited(t, w.pol, execsandbox.Config{})
	const secret = "OUTPUT-SECRET-91ab-NOT-RECORDED"

	t.Run("a command that exits 3 records its exit and output sizes", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(w.ws, "sub", "out.txt"), []byte(secret), 0o644))
		cmd := "cat out.txt; printf 'de' >&2; exit 3"
		res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": cmd, "workdir": "sub"})
		require.False(t, res.IsError, res.Text)
		require.Contains(t, res.Text, secret, "the output is the model's")
		r := sink.last(t, secret)
		assert.Equal(t, audit.Record{
			Time: r.Time, Session: "s", Client: "test-client 2.0", Tool: "exec", Call: "9", Mode: "workspace-write",
			Decision: audit.Allowed, Outcome: audit.OK, DurationMS: r.DurationMS,
			Command: &audit.Command{
				Line: cmd, Workdir: filepath.Join(w.ws, "sub"), Exit: intp(3),
				Stdout: int64(len(secret)), Stderr: 2, Journal: audit.NotJournaled,
				StartMS: r.Command.StartMS, RunMS: r.Command.RunMS,
			},
		}, r)
		assert.Positive(t, r.DurationMS)
		// The sandbox's start and the command's run, both within the call.
		assert.Positive(t, r.Command.StartMS)
		assert.Positive(t, r.Command.RunMS)
		assert.Less(t, r.Command.StartMS, r.DurationMS)
	})

	t.Run("a write outside the roots is denied with the marker it inferred", func(t *testing.T) {
		target := filepath.Join(w.outside, "x")
		res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "touch " + target})
		require.Equal(t, fs.CodeSandboxDenied, res.Code, res.Text)
		assert.NoFileExists(t, target)
		r := sink.last(t)
		marker := sandbox.DenialMarker(sandbox.WorkspaceWrite)
		assert.Equal(t, audit.Denied, r.Decision)
		assert.Equal(t, marker, r.Marker)
		assert.Equal(t, string(fs.CodeSandboxDenied), r.Code)
		assert.Equal(t, audit.Error, r.Outcome)
		require.NotNil(t, r.Command)
		assert.Equal(t, []string{marker}, r.Command.Denials)
		require.NotNil(t, r.Command.Exit)
		assert.NotZero(t, *r.Command.Exit)
		assert.Positive(t, r.Command.Stderr)
	})

	t.Run("rm -rf by a command is not journaled", func(t *testing.T) {
		src := filepath.Join(w.ws, "src")
		require.NoError(t, os.MkdirAll(filepath.Join(src, "pkg"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "pkg", "a.go"), []byte("package pkg\n"), 0o644))
		res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "rm -rf ./src"})
		require.False(t, res.IsError, res.Text)
		assert.NoDirExists(t, src)
		r := sink.last(t)
		require.NotNil(t, r.Command)
		assert.Equal(t, "rm -rf ./src", r.Command.Line)
		assert.Equal(t, audit.NotJournaled, r.Command.Journal)
		assert.Equal(t, intp(0), r.Command.Exit)
	})

	t.Run("credentials in a command line are recorded redacted; the command ran as typed", func(t *testing.T) {
		out := filepath.Join(w.ws, "token.out")
		cmd := `MY_TOKEN=ghp_AAAABBBBCCCCDDDDEEEEFFFF1234; printf %s "$MY_TOKEN" > ` + out
		res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": cmd})
		require.False(t, res.IsError, res.Text)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, "ghp_AAAABBBBCCCCDDDDEEEEFFFF1234", string(b))
		r := sink.last(t)
		require.NotNil(t, r.Command)
		assert.Equal(t, `MY_TOKEN=[REDACTED]; printf %s "$MY_TOKEN" > `+out, r.Command.Line)
	})

	t.Run("a long command line is cut on a character boundary", func(t *testing.T) {
		fits := "true # " + strings.Repeat("x", audit.MaxCommandLine-len("true # "))
		for _, tc := range []struct {
			name, cmd, want string
		}{
			{name: "a line of exactly the limit is kept whole", cmd: fits, want: fits},
			{name: "one byte more is cut", cmd: fits + "y", want: fits[:audit.MaxCommandLine-len("…")] + "…"},
			{name: "a cut never splits a character", cmd: "true # " + strings.Repeat("é", audit.MaxCommandLine)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": tc.cmd})
				require.False(t, res.IsError, res.Text)
				line := sink.last(t).Command.Line
				assert.LessOrEqual(t, len(line), audit.MaxCommandLine)
				assert.True(t, utf8.ValidString(line))
				if tc.want != "" {
					assert.Equal(t, tc.want, line)
					return
				}
				assert.Greater(t, len(line), audit.MaxCommandLine-len("é…"))
				assert.True(t, strings.HasSuffix(line, "…"))
				assert.True(t, strings.HasPrefix(tc.cmd, strings.TrimSuffix(line, "…")))
			})
		}
	})

	t.Run("a refused argument is invalid and runs nothing", func(t *testing.T) {
		res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "touch ran", "timeout_ms": -1})
		require.True(t, res.IsError)
		assert.NoFileExists(t, filepath.Join(w.ws, "ran"))
		r := sink.last(t)
		assert.Equal(t, audit.Invalid, r.Decision)
		assert.Equal(t, string(errcode.InvalidArgument), r.Code)
		assert.Nil(t, r.Command, "no command ran")
	})

	t.Run("an escalation approved once records the mode the command ran under", func(t *testing.T) {
		target := filepath.Join(w.outside, "approved")
		res := auCall(t, tl.Exec(), w.sess, sandbox.AllowedOnce, map[string]any{
			"command": "touch " + target, "sandbox_permissions": "danger-full-access", "justification": "Make the file outside.",
		})
		require.False(t, res.IsError, res.Text)
		assert.FileExists(t, target)
		r := sink.last(t)
		assert.Equal(t, audit.Approved, r.Decision)
		assert.Equal(t, "danger-full-access", r.Mode)
		assert.Equal(t, &audit.Escalation{What: "danger-full-access", Justification: "Make the file outside.", Answer: "allowed-once", Scope: "once"}, r.Escalation)
	})

	t.Run("a background command's record is written when it starts; exec_output leaves its own", func(t *testing.T) {
		res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "echo started; sleep 0.2", "background": true})
		require.False(t, res.IsError, res.Text)
		started, ok := res.Value.(toolexec.Started)
		require.True(t, ok, "%T", res.Value)
		r := sink.last(t)
		require.NotNil(t, r.Command)
		assert.True(t, r.Command.Background)
		assert.Nil(t, r.Command.Exit, "still running")
		assert.Equal(t, audit.NotJournaled, r.Command.Journal)
		assert.Equal(t, w.ws, r.Command.Workdir)

		deadline := time.Now().Add(10 * time.Second)
		for {
			res = auCall(t, tl.Output(), w.sess, "", map[string]any{"id": started.ID})
			r = sink.last(t)
			assert.Equal(t, "exec_output", r.Tool)
			assert.Equal(t, audit.OK, r.Outcome)
			if out, ok := res.Value.(toolexec.Output); ok && out.State != "running" || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestAuditRecordsCommandReadDenial: a command refused a credential read
// is denied with the read marker, and its record holds no secret.
func TestAuditRecordsCommandReadDenial(t *testing.T) {
	w := newSecretWorld(t, sandbox.WorkspaceWrite)
	tl, sink := audited(t, w.pol, execsandbox.Config{})
	res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "cat .env"})
	require.Equal(t, fs.CodeReadDenied, res.Code, res.Text)
	r := sink.last(t, w.marker)
	assert.Equal(t, audit.Denied, r.Decision)
	assert.Equal(t, sandbox.ReadDenialMarker(sandbox.WorkspaceWrite), r.Marker)
	assert.Equal(t, []string{r.Marker}, r.Command.Denials)
}

// TestAuditRecordsHosts: a command the domain proxy refused a host records
// the host refused and the network marker; one allowed the host once
// records the host allowed and the escalation.
func TestAuditRecordsHosts(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl, sink := audited(t, w.pol, execsandbox.Config{
		AllowDomains: []string{"allowed.test"}, Resolver: fixture.LoopbackResolver{"allowed.test", "refused.test"},
	})
	port, _ := fixture.HTTPServer(t)
	perl := fixture.Perl(t)

	res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": fixture.ProxyGet(perl, "refused.test", port)})
	require.EqualValues(t, guard.CodeNetworkDenied, res.Code, res.Text)
	r := sink.last(t)
	assert.Equal(t, audit.Denied, r.Decision)
	assert.Equal(t, sandbox.NetworkDenialMarker(sandbox.WorkspaceWrite), r.Marker)
	assert.Equal(t, []string{"refused.test"}, r.Command.HostsRefused)
	assert.Empty(t, r.Command.HostsAllowed, "--allow-domain is policy, not a grant")

	res = auCall(t, tl.Exec(), w.sess, sandbox.AllowedOnce, map[string]any{
		"command": fixture.ProxyGet(perl, "refused.test", port), "allow_hosts": []string{"refused.test"}, "justification": "Fetch the fixture.",
	})
	require.False(t, res.IsError, res.Text)
	r = sink.last(t)
	assert.Equal(t, audit.Approved, r.Decision)
	assert.Equal(t, &audit.Escalation{What: "hosts refused.test", Justification: "Fetch the fixture.", Answer: "allowed-once", Scope: "once"}, r.Escalation)
	assert.Equal(t, []string{"refused.test"}, r.Command.HostsAllowed)
	assert.Empty(t, r.Command.HostsRefused)
	assert.Equal(t, intp(0), r.Command.Exit)
}

// TestUserNamespacesExplained (issue 36): a confined command whose program
// fails making a user namespace of its own (unshare, as Chromium's sandbox
// does) gets a result that says why and what to do.
func TestUserNamespacesExplained(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl, _ := audited(t, w.pol, execsandbox.Config{})
	res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "unshare -U true"})
	assert.True(t, strings.HasPrefix(res.Text, "[sandbox: commands cannot make user namespaces]\n"), res.Text)
	assert.Contains(t, res.Text, "--no-sandbox")
	assert.Contains(t, res.Text, "exit code 1")
}

// TestChromiumExplained (issue 36): the real Chromium, whose own sandbox
// needs a user namespace, fails under harness's with a result that says
// why and names --no-sandbox; with --no-sandbox (harness's sandbox
// confining it) it renders a page. (The test world has no temp root:
// its HOME and TMPDIR are the command's own /dev/shm: short paths, as
// Chromium's sockets need.)
func TestChromiumExplained(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian: apt-get install --no-install-recommends chromium; .ci/run installs it)")
	}
	w := newWorld(t, sandbox.WorkspaceWrite)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root without --no-sandbox, whatever
		// confines it: the commands run as the workspace's owner.
		for d := filepath.Dir(w.ws); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
			require.NoError(t, os.Chmod(d, 0o755))
		}
		require.NoError(t, filepath.Walk(w.ws, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 1000, 1000)
		}))
	}
	tl, _ := audited(t, w.pol, execsandbox.Config{})
	res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "HOME=/dev/shm TMPDIR=/dev/shm " + chromium + " --headless --dump-dom about:blank"})
	assert.True(t, strings.HasPrefix(res.Text, "[sandbox: commands cannot make user namespaces]\n"), res.Text)
	assert.Contains(t, res.Text, "No usable sandbox")
	assert.Contains(t, res.Text, "pass --no-sandbox")
	res = auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": "HOME=/dev/shm TMPDIR=/dev/shm " + chromium + ` --headless --no-sandbox --dump-dom "data:text/html,<p>rendered</p>"`})
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "<body><p>rendered</p></body>")
}

// TestAuditRecordsInput (issue 38): exec_input's record names the command
// typed to and keeps what was typed, redacted as a command line is; the
// line typed at a prompt that reads it without echo (a password) is not
// recorded, only its length, while what a program reading raw without echo
// gets (a REPL's line editing) is.
func TestAuditRecordsInput(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl, sink := audited(t, w.pol, execsandbox.Config{})
	var input *tool.Tool
	for _, x := range tl.All() {
		if x.Name == "exec_input" {
			input = x
		}
	}
	require.NotNil(t, input)
	cmd := `read -r a; echo "a=$a"; stty -echo; echo secret-prompt; read -r p; stty echo; echo "p=${#p}"; read -r b; ` +
		`stty -echo -icanon; echo raw-prompt; v=$(dd bs=1 count=8 2>/dev/null); stty sane; echo "v=$v"; read -r c`
	res := auCall(t, tl.Exec(), w.sess, "", map[string]any{"command": cmd, "tty": true, "wait_ms": 0})
	require.False(t, res.IsError, res.Text)
	id := res.Value.(toolexec.Output).ID
	sink.last(t)

	const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	res = auCall(t, input, w.sess, "", map[string]any{"id": id, "input": "curl -H 'Authorization: Bearer " + token + "'\n", "wait_ms": 5000})
	require.False(t, res.IsError, res.Text)
	r := sink.last(t, token)
	require.NotNil(t, r.Command)
	assert.Equal(t, "exec_input", r.Tool)
	assert.Equal(t, cmd, r.Command.Line)
	assert.True(t, r.Command.Background)
	assert.Contains(t, r.Command.Input, "curl -H 'Authorization: ")

	const password = "hunter2-NOT-RECORDED"
	screen := res.Value.(toolexec.Output).Stdout
	require.Eventually(t, func() bool {
		out := auCall(t, tl.Output(), w.sess, "", map[string]any{"id": id})
		sink.last(t)
		screen += out.Value.(toolexec.Output).Stdout
		return strings.Contains(screen, "secret-prompt")
	}, 20*time.Second, 20*time.Millisecond)
	res = auCall(t, input, w.sess, "", map[string]any{"id": id, "input": password + "\n", "wait_ms": 5000})
	require.False(t, res.IsError, res.Text)
	assert.NotContains(t, res.Text, password, "not echoed")
	r = sink.last(t, password)
	assert.Equal(t, "[20 bytes typed at a prompt that did not echo: not recorded]", r.Command.Input)
	screen += res.Value.(toolexec.Output).Stdout
	res = auCall(t, input, w.sess, "", map[string]any{"id": id, "input": "visible\n", "wait_ms": 5000})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "visible\n", sink.last(t).Command.Input)
	screen += res.Value.(toolexec.Output).Stdout
	require.Eventually(t, func() bool {
		out := auCall(t, tl.Output(), w.sess, "", map[string]any{"id": id})
		sink.last(t)
		screen += out.Value.(toolexec.Output).Stdout
		return strings.Contains(screen, "raw-prompt")
	}, 20*time.Second, 20*time.Millisecond)
	res = auCall(t, input, w.sess, "", map[string]any{"id": id, "input": "rawtyped", "wait_ms": 5000})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "rawtyped", sink.last(t).Command.Input, "raw input without echo is a program's own line editing: recorded")
	assert.Contains(t, screen+res.Value.(toolexec.Output).Stdout, "p=20")
}

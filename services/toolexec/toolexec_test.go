package toolexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

func TestMain(m *testing.M) {
	if subproc.IsHelper(os.Args) {
		os.Exit(subproc.Main())
	}
	os.Exit(m.Run())
}

type world struct {
	ws, outside string
	pol         *sandboxpolicy.Service
	sess        *session.Session
	asked       []sandbox.ApprovalRequest
}

// newWorld is a workspace and an outside directory, with no temp roots (so
// the outside is outside every writable root) and a session standing in
// mode.
func newWorld(t *testing.T, mode sandbox.Mode) *world {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	w := &world{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	require.NoError(t, os.MkdirAll(filepath.Join(w.ws, "sub"), 0o755))
	require.NoError(t, os.Mkdir(w.outside, 0o755))
	w.pol, err = sandboxpolicy.New(sandboxpolicy.Config{Mode: mode, WorkspaceRoot: w.ws, TempRoots: []string{}})
	require.NoError(t, err)
	w.sess = session.New("s", w.ws)
	return w
}

func (w *world) tool(t *testing.T, confined bool, answer sandbox.Outcome) *tool.Tool {
	t.Helper()
	var r exec.Runner
	var err error
	if confined {
		r, err = execsandbox.New(execsandbox.Config{}, exec.Config{}, w.pol)
	} else {
		r, err = execlocal.New(exec.Config{})
	}
	require.NoError(t, err)
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{
		Runner: r, Policy: w.pol,
		Approver: sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
			w.asked = append(w.asked, req)
			return answer, nil
		}),
	})
	require.NoError(t, err)
	return tl.Exec()
}

func call(t *testing.T, tl *tool.Tool, sess *session.Session, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Handler(session.NewContext(t.Context(), sess), tool.Call{ID: "1", Arguments: raw})
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
}

func TestTouchOutsideIsDeniedThenLandsAfterApproval(t *testing.T) {
	requireLandlock(t)
	w := newWorld(t, sandbox.WorkspaceWrite)
	target := filepath.Join(w.outside, "x")
	cmd := "touch " + target

	res := call(t, w.tool(t, true, sandbox.AllowedOnce), w.sess, map[string]any{"command": cmd})
	require.True(t, res.IsError, res.Text)
	assert.EqualValues(t, "FS_SANDBOX_DENIED", res.Code)
	assert.True(t, strings.HasPrefix(res.Text, "Error: [sandbox: file access denied under workspace-write mode]\n(inferred: "), res.Text)
	assert.Contains(t, res.Text, strconv.Quote(target))
	assert.Contains(t, res.Text, sandbox.EscalationHint(sandbox.SubjectCommand))
	assert.NoFileExists(t, target)
	assert.Empty(t, w.asked, "no approver is asked without sandbox_permissions")

	res = call(t, w.tool(t, true, sandbox.AllowedOnce), w.sess, map[string]any{
		"command": cmd, "sandbox_permissions": "danger-full-access", "justification": "The test needs a file outside.",
	})
	require.False(t, res.IsError, res.Text)
	assert.FileExists(t, target)
	require.Len(t, w.asked, 1)
	assert.Equal(t, cmd, w.asked[0].Command)
	assert.Equal(t, w.ws, w.asked[0].Workdir)
	assert.Equal(t, "exec", w.asked[0].Tool)
	assert.Equal(t, sandbox.DangerFullAccess, w.asked[0].Mode)

	// The grant was for that one call: the next one is confined again.
	again := filepath.Join(w.outside, "y")
	res = call(t, w.tool(t, true, sandbox.AllowedOnce), w.sess, map[string]any{"command": "touch " + again})
	assert.EqualValues(t, "FS_SANDBOX_DENIED", res.Code)
	assert.NoFileExists(t, again)
}

func TestRejectedEscalationRunsNothing(t *testing.T) {
	requireLandlock(t)
	w := newWorld(t, sandbox.WorkspaceWrite)
	target := filepath.Join(w.outside, "x")
	res := call(t, w.tool(t, true, sandbox.Rejected), w.sess, map[string]any{
		"command": "touch " + target, "sandbox_permissions": "danger-full-access", "justification": "Because.",
	})
	assert.EqualValues(t, sandboxpolicy.CodeEscalationRefused, res.Code)
	assert.NoFileExists(t, target)
}

func TestReadOnlyDeniesTheWorkspaceToo(t *testing.T) {
	requireLandlock(t)
	w := newWorld(t, sandbox.ReadOnly)
	res := call(t, w.tool(t, true, sandbox.AllowedOnce), w.sess, map[string]any{"command": "echo x > made", "workdir": "sub"})
	assert.EqualValues(t, "FS_SANDBOX_DENIED", res.Code, res.Text)
	assert.Contains(t, res.Text, "[sandbox: file access denied under read-only mode]")
	assert.NoFileExists(t, filepath.Join(w.ws, "sub", "made"))
}

func TestTimeoutKillsTheTreeIncludingSetsid(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	for i, confined := range []bool{true, false} {
		if confined && subproc.Probe().LandlockABI < 1 {
			continue
		}
		t.Run("confined="+strconv.FormatBool(confined), func(t *testing.T) {
			// A duration no other process uses names the sleepers on the
			// host, whatever PID namespace they ran in.
			token := fmt.Sprintf("300.%d%d", os.Getpid(), i)
			started := filepath.Join(w.ws, "started-"+strconv.FormatBool(confined))
			start := time.Now()
			res := call(t, w.tool(t, confined, sandbox.Rejected), w.sess, map[string]any{
				"command": `setsid sh -c 'echo a >> ` + started + `; exec sleep ` + token + `' & sh -c 'echo b >> ` + started +
					`; exec sleep ` + token + `' & sleep 300`,
				"timeout_ms": 4000,
			})
			assert.Less(t, time.Since(start), time.Minute)
			require.True(t, res.IsError)
			assert.EqualValues(t, toolexec.CodeTimedOut, res.Code)
			assert.True(t, res.Value.(toolexec.Value).TimedOut)
			b, err := os.ReadFile(started)
			require.NoError(t, err)
			require.Len(t, strings.Fields(string(b)), 2, "both sleepers started before the timeout")
			assert.Empty(t, processesWith("sleep\x00"+token), "a sleeper survived the timeout")
		})
	}
}

// processesWith returns the live, non-zombie host pids whose command line
// contains arg (NUL-separated arguments, written with \x00).
func processesWith(arg string) []string {
	want := strings.ReplaceAll(arg, "\\x00", "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), want) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !strings.Contains(string(stat), ") Z") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestArguments(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl := w.tool(t, false, sandbox.AllowedOnce)
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing command", map[string]any{}, "command must be a non-empty string"},
		{"timeout over the maximum", map[string]any{"command": "true", "timeout_ms": 600001}, "timeout_ms must be at most 600000"},
		{"fractional timeout", map[string]any{"command": "true", "timeout_ms": 1.5}, "timeout_ms must be a positive integer"},
		{"workdir outside the workspace", map[string]any{"command": "true", "workdir": w.outside}, "is not beneath the workspace"},
		{"workdir climbing out", map[string]any{"command": "true", "workdir": "../outside"}, "is not beneath the workspace"},
		{"missing workdir", map[string]any{"command": "true", "workdir": "nope"}, "is not an existing directory"},
		{"escalation on a runner that does not confine", map[string]any{"command": "true", "sandbox_permissions": "danger-full-access", "justification": "x"}, "not available"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, tl, w.sess, c.args)
			require.True(t, res.IsError)
			assert.EqualValues(t, errcode.InvalidArgument, res.Code)
			assert.Contains(t, res.Text, c.want)
		})
	}
	t.Run("a relative workdir runs beneath the workspace", func(t *testing.T) {
		res := call(t, tl, w.sess, map[string]any{"command": "pwd; exit 4", "workdir": "sub"})
		require.False(t, res.IsError, res.Text)
		v := res.Value.(toolexec.Value)
		assert.EqualValues(t, 4, v.ExitCode)
		assert.Equal(t, filepath.Join(w.ws, "sub")+"\n", v.Stdout)
		assert.True(t, strings.HasPrefix(res.Text, "exit code 4 ("), res.Text)
	})
}

func TestConcurrentCommandsAreCapped(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	tl, err := toolexec.New(toolexec.Config{MaxConcurrent: 1}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	// Each command holds a directory as a lock for a second: two running
	// at once would make one mkdir fail.
	results := make(chan tool.Result, 2)
	for range 2 {
		go func() {
			results <- call(t, tl.Exec(), w.sess, map[string]any{"command": "mkdir lock && sleep 1 && rmdir lock"})
		}()
	}
	for range 2 {
		res := <-results
		assert.False(t, res.IsError, res.Text)
		assert.EqualValues(t, 0, res.Value.(toolexec.Value).ExitCode, res.Text)
	}
}

func TestCommandCannotConnectToAUnixSocketOutside(t *testing.T) {
	requireLandlock(t)
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no python3 to connect with")
	}
	w := newWorld(t, sandbox.WorkspaceWrite)
	sock := filepath.Join(w.outside, "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close() //nolint:errcheck // test listener
	res := call(t, w.tool(t, true, sandbox.Rejected), w.sess, map[string]any{
		"command": py + ` -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("connected")' ` + sock,
	})
	v := res.Value.(toolexec.Value)
	assert.NotEqual(t, 0, v.ExitCode)
	assert.NotContains(t, v.Stdout, "connected")
	// The Landlock isolation below ABI 9 refuses the socket (EPERM); the
	// bubblewrap view masks the host's (ECONNREFUSED).
	assert.Regexp(t, "Operation not permitted|Connection refused", v.Stderr)
}

// TestReservedHostRunWriteIsMarked (issue 36): a command's write to a
// host-run name reserved at the top of the workspace (a read-only
// placeholder holds it while the command runs) fails with "Is a
// directory", "File exists", or, at a root's `.git` outside a repository
// (a named pipe holds it), "Not a directory" or "Permission denied", and gets
// the sandbox's marker like any
// refused write; the name is not on disk afterwards. The same errors on
// the command's own paths stay plain results.
func TestReservedHostRunWriteIsMarked(t *testing.T) {
	requireLandlock(t)
	const marker = "[sandbox: file access denied under workspace-write mode]"
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl := w.tool(t, true, sandbox.Rejected)
	cases := []struct {
		name, command, workdir, target, refusal string
		python                                  bool
	}{
		{name: "a shell redirect to .mcp.json", command: "echo x > .mcp.json", target: ".mcp.json", refusal: "Is a directory"},
		{name: "a shell redirect to .gitmodules", command: "echo x > .gitmodules", target: ".gitmodules", refusal: "Is a directory"},
		{name: "a shell redirect to .envrc", command: "echo x > .envrc", target: ".envrc", refusal: "Is a directory"},
		{name: "a shell redirect to .zed", command: "echo x > .zed", target: ".zed", refusal: "Is a directory"},
		{name: "mkdir .zed", command: "mkdir .zed", target: ".zed", refusal: "File exists"},
		{name: "from a subdirectory", command: "echo x > ../.mcp.json", workdir: "sub", target: ".mcp.json", refusal: "Is a directory"},
		{name: "python open", command: `python3 -c 'open(".mcp.json", "w").write("x")'`, target: ".mcp.json", refusal: "Is a directory", python: true},
		// A root's .git outside a repository is reserved as a named pipe.
		{name: "a hook beneath .git", command: "mkdir -p .git/hooks", target: ".git", refusal: "Not a directory"},
		{name: "a config beneath .git", command: "touch .git/config", target: ".git/config", refusal: "Not a directory"},
		{name: "a shell redirect to .git", command: "echo x > .git", target: ".git", refusal: "Permission denied"},
		{name: "python open of .git", command: `python3 -c 'open(".git", "w").write("x")'`, target: ".git", refusal: "Permission denied", python: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.python {
				if _, err := os.Stat("/usr/bin/python3"); err != nil {
					t.Skip("no python3")
				}
			}
			args := map[string]any{"command": c.command}
			if c.workdir != "" {
				args["workdir"] = c.workdir
			}
			res := call(t, tl, w.sess, args)
			require.True(t, res.IsError, res.Text)
			assert.EqualValues(t, "FS_SANDBOX_DENIED", res.Code, res.Text)
			assert.True(t, strings.HasPrefix(res.Text, "Error: "+marker+"\n(inferred: the command failed and its stderr reports "+
				strconv.Quote(c.refusal)+" on "+strconv.Quote(filepath.Join(w.ws, c.target))+", "+sandboxpolicy.BoundaryProtected), res.Text)
			assert.Contains(t, res.Text, sandbox.EscalationHint(sandbox.SubjectCommand))
			assert.Equal(t, res.Marker, marker)
			v := res.Value.(toolexec.Value)
			assert.NotZero(t, v.ExitCode)
			_, err := os.Lstat(filepath.Join(w.ws, c.target))
			assert.True(t, os.IsNotExist(err), "%s is on disk: %v", c.target, err)
		})
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, ".envrc"), []byte("kept\n"), 0o644))
	for _, c := range []struct{ name, command string }{
		{"mkdir of an existing directory", "mkdir sub"},
		{"a redirect to an existing directory", "echo x > sub"},
		{"mkdir of an existing directory named like a host-run file, below the top", "mkdir -p sub/.zed && mkdir sub/.zed"},
		{"mkdir of a host-run file there (protected, not reserved)", "mkdir .envrc"},
		{"mkdir of an existing directory outside", "mkdir " + w.outside},
	} {
		t.Run(c.name+" stays unmarked", func(t *testing.T) {
			res := call(t, tl, w.sess, map[string]any{"command": c.command})
			assert.False(t, res.IsError, res.Text)
			assert.Empty(t, res.Marker)
			assert.NotContains(t, res.Text, "[sandbox:")
			assert.NotZero(t, res.Value.(toolexec.Value).ExitCode, res.Text)
		})
	}
	got, err := os.ReadFile(filepath.Join(w.ws, ".envrc"))
	require.NoError(t, err)
	assert.Equal(t, "kept\n", string(got))
}

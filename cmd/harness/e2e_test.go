//go:build linux

package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
)

// binDir is the directory buildOnce built the binary in; TestMain removes
// it, so no run leaves a harness-bin-* directory behind.
var binDir string

// TestMain gives the servers the tests start a state directory of their
// own (XDG_STATE_HOME: the journal and the audit log are never the user's
// own), under /var/tmp: outside /tmp, a default temp root, where the
// server refuses an audit log. It runs the tests, then removes it and the
// binary they built.
func TestMain(m *testing.M) {
	state, err := os.MkdirTemp("/var/tmp", "harness-state-")
	if err != nil {
		panic(err)
	}
	if err := os.Setenv("XDG_STATE_HOME", state); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(state)
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildOnce builds the harness binary once per test process as make build
// does (scripts/build-harness.sh: with the command helper embedded), or
// takes the one HARNESS_TEST_BINARY names: scripts/test-unprivileged.sh
// builds it the same way from the same tree as root just before, so the
// unprivileged user's pass does not compile the whole module again in a
// build cache of its own.
var buildOnce = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("HARNESS_TEST_BINARY"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "harness-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "harness")
	out, err := exec.Command("../../scripts/build-harness.sh", bin).CombinedOutput()
	if err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// e2eWorld is a workspace and an outside directory, with the workspace's
// directory as the only temp root so the outside is outside every root.
type e2eWorld struct{ ws, outside string }

func newE2EWorld(t *testing.T) e2eWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	w := e2eWorld{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	fixture.Build(t, base, "ws/notes.txt: hello world\n", "outside/")
	return w
}

// connect starts `harness serve` with args and connects a go-sdk client
// speaking protocol (empty: the newest), with the given elicitation answers
// and roots (nil: the client offers no roots capability).
func connect(t *testing.T, protocol string, answers []*mcp.ElicitResult, roots []*mcp.Root, args ...string) (*mcp.ClientSession, *[]string) {
	t.Helper()
	bin, err := buildOnce()
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		asked []string
	)
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			if len(answers) == 0 {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			a := answers[0]
			answers = answers[1:]
			return a, nil
		},
	}
	if roots == nil {
		opts.Capabilities = &mcp.ClientCapabilities{} // no roots capability
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, opts)
	if roots != nil {
		client.AddRoots(roots...)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--log-level", "warn"}, args...)...)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, &asked
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "a tool failure is a result, never a protocol error")
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func code(res *mcp.CallToolResult) any { return res.Meta["harness/code"] }

var protocols = []struct{ name, version string }{
	{"2025-11-25 in-handler elicitation", "2025-11-25"},
	{"2026-07-28 input-request retry", ""},
}

// TestServeEndToEnd drives `harness serve` over real stdio with the go-sdk
// client in both protocol generations: list tools; read; write inside; write
// outside denied with the marker and code; escalation approved (lands) and
// declined (nothing changes) through the client's elicitation handler.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			w := newE2EWorld(t)
			answers := []*mcp.ElicitResult{
				{Action: "accept", Content: map[string]any{"decision": "allow-once"}},
				{Action: "decline"},
			}
			cs, asked := connect(t, p.version, answers, nil,
				"--workspace", w.ws, "--mode", "workspace-write", "--temp-root", w.ws)

			tools, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
				require.NotNil(t, tl.Annotations)
				require.NotNil(t, tl.Annotations.OpenWorldHint)
				assert.False(t, *tl.Annotations.OpenWorldHint, tl.Name)
				assert.NotNil(t, tl.OutputSchema, tl.Name)
			}
			assert.ElementsMatch(t, []string{"delete", "edit", "exec", "exec_input", "exec_kill", "exec_output", "glob", "grep", "list", "mkdir", "move", "read", "write"}, names)

			res := callTool(t, cs, "read", map[string]any{"file_path": "notes.txt"})
			require.False(t, res.IsError, text(res))
			assert.Equal(t, "<path>"+filepath.Join(w.ws, "notes.txt")+"</path>\n<type>file</type>\n<content>\n1: hello world\n\n(End of file - total 1 lines)\n</content>", text(res))
			assert.NotNil(t, res.StructuredContent)

			res = callTool(t, cs, "write", map[string]any{"file_path": "new.txt", "content": "inside\n"})
			require.False(t, res.IsError, text(res))
			assert.Equal(t, "inside\n", readFile(t, filepath.Join(w.ws, "new.txt")))

			outside := filepath.Join(w.outside, "x.txt")
			res = callTool(t, cs, "write", map[string]any{"file_path": outside, "content": "x"})
			require.True(t, res.IsError)
			assert.Equal(t, "FS_SANDBOX_DENIED", code(res))
			assert.True(t, strings.HasPrefix(text(res), "Error: [sandbox: file access denied under workspace-write mode]\n[sandbox: escalation available"), text(res))
			assert.NoFileExists(t, outside)
			assert.Empty(t, *asked, "a plain call never asks")

			escalate := map[string]any{"file_path": outside, "content": "granted", "sandbox_permissions": "danger-full-access", "justification": "The user asked for it."}
			res = callTool(t, cs, "write", escalate)
			require.False(t, res.IsError, text(res))
			assert.Equal(t, "granted", readFile(t, outside), "the approved escalation lands")
			require.Len(t, *asked, 1)
			assert.Contains(t, (*asked)[0], `"write"`)
			assert.Contains(t, (*asked)[0], `under the danger-full-access sandbox mode`)
			assert.Contains(t, (*asked)[0], "The user asked for it.")

			declined := filepath.Join(w.outside, "declined.txt")
			escalate["file_path"] = declined
			res = callTool(t, cs, "write", escalate)
			require.True(t, res.IsError)
			assert.Equal(t, `Error: the user rejected escalating this operation to "danger-full-access"`, text(res))
			assert.NoFileExists(t, declined, "the declined escalation changes nothing")
			assert.Len(t, *asked, 2)
		})
	}
}

// TestServeSessionCwd: with no --workspace, a client that offers roots gets
// its first file:// root as the session cwd; one that offers none gets the
// server's working directory.
func TestServeSessionCwd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, p := range protocols {
		t.Run(p.name+"/roots offered", func(t *testing.T) {
			w := newE2EWorld(t)
			cs, _ := connect(t, p.version, nil, []*mcp.Root{{URI: "file://" + w.ws, Name: "ws"}}, "--mode", "workspace-write")
			res := callTool(t, cs, "read", map[string]any{"file_path": "notes.txt"})
			require.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "<path>"+filepath.Join(w.ws, "notes.txt")+"</path>")
			res = callTool(t, cs, "write", map[string]any{"file_path": "rooted.txt", "content": "r"})
			require.False(t, res.IsError, text(res))
			assert.FileExists(t, filepath.Join(w.ws, "rooted.txt"), "the root is the workspace")
		})
		t.Run(p.name+"/no roots", func(t *testing.T) {
			cs, _ := connect(t, p.version, nil, nil)
			res := callTool(t, cs, "list", map[string]any{})
			require.False(t, res.IsError, text(res))
			wd, err := os.Getwd()
			require.NoError(t, err)
			wd, err = filepath.EvalSymlinks(wd)
			require.NoError(t, err)
			assert.Contains(t, text(res), "<path>"+wd+"</path>", "the server's working directory")
		})
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestDemo is issue 14 item 19: the demo's account of its server's policy is
// exactly what `harness policy` prints for the same flags, and the session it
// shows runs (the outside write denied, the escalation declined).
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	out, err := exec.Command(bin, "demo").Output()
	require.NoError(t, err, string(out))
	demo := string(out)

	_, after, ok := strings.Cut(demo, "\nserver: harness serve ")
	require.True(t, ok, demo)
	serveLine, after, _ := strings.Cut(after, "\n")
	_, after, ok = strings.Cut(after, "its policy, as `harness policy` with the same flags prints it:\n")
	require.True(t, ok, demo)
	block, _, _ := strings.Cut(after, "\n(")
	// The demo's workspace is gone: run policy with the same flags on a
	// workspace of our own, and compare with the paths swapped back.
	args := strings.Fields(serveLine)
	i := slices.Index(args, "--workspace")
	require.GreaterOrEqual(t, i, 0, serveLine)
	theirs := args[i+1]
	ours, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for j := range args {
		args[j] = strings.ReplaceAll(args[j], theirs, ours)
	}
	policy, err := exec.Command(bin, append([]string{"policy"}, args...)...).Output()
	require.NoError(t, err)
	want := strings.ReplaceAll(strings.TrimSuffix(string(policy), "\n"), ours, theirs)
	assert.Equal(t, want, strings.ReplaceAll(strings.TrimPrefix(block, "   "), "\n   ", "\n"),
		"the demo prints the policy harness policy reports")
	assert.Contains(t, demo, "writable roots:\n")
	assert.NotContains(t, demo, "only writable root")
	assert.Contains(t, demo, "(isError, code FS_SANDBOX_DENIED)")
	assert.Contains(t, demo, "[the user declines]")
	assert.Contains(t, demo, "nothing was written outside the writable roots")
}

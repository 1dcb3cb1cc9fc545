//go:build linux

package subproc_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// janitorServerEnv names, in the test binary's environment, a directory
// where TestMain plays a server instead of running the tests
// (janitorServer); janitorSandboxEnv, a pid it hands its janitor as a
// sandbox's init.
const (
	janitorServerEnv  = "SUBPROC_TEST_JANITOR_SERVER"
	janitorSandboxEnv = "SUBPROC_TEST_JANITOR_SANDBOX"
)

// janitorReserved are the names janitorServer reserves in its directory:
// a directory, an empty file, a named pipe (a root's .git), a file with
// content (a commondir), and one the test holds too.
var janitorReserved = []string{".vscode", ".mcp.json", ".git", "commondir", ".claude"}

// janitorServer starts the janitor from the test binary, reserves
// janitorReserved (and .envrc, which is something real) in dir, hands the
// janitor the sandbox of janitorSandboxEnv if set, says "ready" and waits
// for its end (a kill).
func janitorServer(dir string) int {
	fail := func(err error) int { fmt.Println("error:", err); return 1 }
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	prog, err := subproc.OpenProgram(self)
	if err != nil {
		return fail(err)
	}
	if err := subproc.StartJanitor(prog); err != nil {
		return fail(err)
	}
	var held []*subproc.Reservation
	for _, r := range []struct {
		name string
		do   func(p string) (*subproc.Reservation, error)
	}{
		{".vscode", func(p string) (*subproc.Reservation, error) { return subproc.Reserve(p, true) }},
		{".mcp.json", func(p string) (*subproc.Reservation, error) { return subproc.Reserve(p, false) }},
		{".git", func(p string) (*subproc.Reservation, error) { return subproc.ReserveEither(p, false) }},
		{"commondir", func(p string) (*subproc.Reservation, error) { return subproc.ReserveFile(p, ".\n") }},
		{".claude", func(p string) (*subproc.Reservation, error) { return subproc.Reserve(p, true) }},
		{".envrc", func(p string) (*subproc.Reservation, error) { return subproc.Reserve(p, false) }},
	} {
		h, err := r.do(filepath.Join(dir, r.name))
		if err != nil {
			return fail(err)
		}
		if (h == nil) != (r.name == ".envrc") {
			return fail(fmt.Errorf("reserving %s: got %v", r.name, h))
		}
		held = append(held, h)
	}
	if s := os.Getenv(janitorSandboxEnv); s != "" {
		pid, err := strconv.Atoi(s)
		if err != nil {
			return fail(err)
		}
		subproc.JanitorSandbox(pid)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	subproc.ReleaseAll(held...)
	return 0
}

// startJanitorServer starts janitorServer on dir (with env) and returns it
// once it is ready.
func startJanitorServer(t *testing.T, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(self(t))
	cmd.Env = append([]string{janitorServerEnv + "=" + dir}, env...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = in.Close() })
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	return cmd
}

// names returns the names in dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestJanitorRemovesADeadServersPlaceholders (issue 34, a crash leaves
// nothing): a server killed with SIGKILL while its reservations are held
// used to leave every placeholder in the user's tree. Its janitor removes
// each one nothing else holds, of each kind, and leaves the one another
// process holds (removed at that one's release) and what is real.
func TestJanitorRemovesADeadServersPlaceholders(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".envrc"), []byte("export A=1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	ours, err := subproc.Reserve(filepath.Join(dir, ".claude"), true)
	require.NoError(t, err)
	require.NotNil(t, ours)

	server := startJanitorServer(t, dir)
	assert.ElementsMatch(t, append([]string{".envrc", "main.go"}, janitorReserved...), names(t, dir), "the server's placeholders, while it lives")
	require.NoError(t, server.Process.Kill())
	_ = server.Wait()

	want := []string{".claude", ".envrc", "main.go"}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, names(t, dir)) }, 20*time.Second, 10*time.Millisecond,
		"what the janitor leaves: the placeholder this process holds and the real files; there: %v", names(t, dir))
	b, err := os.ReadFile(filepath.Join(dir, ".envrc"))
	require.NoError(t, err)
	assert.Equal(t, "export A=1\n", string(b))
	st, err := os.Lstat(filepath.Join(dir, ".claude"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o555, st.Mode(), "the held placeholder, as it was")

	subproc.ReleaseAll(ours)
	assert.ElementsMatch(t, []string{".envrc", "main.go"}, names(t, dir))
}

// TestJanitorWaitsForTheServersSandboxes: a placeholder removed while a
// command still runs would take that command's mount with it, so the
// janitor of a dead server removes nothing while a sandbox it was handed
// lives (bubblewrap's parent-death signal ends a real one at once; here a
// stand-in that stays), and removes them once it has ended.
func TestJanitorWaitsForTheServersSandboxes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".envrc"), []byte("export A=1\n"), 0o644))
	sandbox := exec.Command("sleep", "600")
	require.NoError(t, sandbox.Start())
	t.Cleanup(func() { _ = sandbox.Process.Kill(); _ = sandbox.Wait() })

	server := startJanitorServer(t, dir, janitorSandboxEnv+"="+strconv.Itoa(sandbox.Process.Pid))
	require.NoError(t, server.Process.Kill())
	_ = server.Wait()
	// Time for a janitor that does not wait to remove them.
	time.Sleep(time.Second)
	assert.ElementsMatch(t, append([]string{".envrc"}, janitorReserved...), names(t, dir), "removed while the sandbox lived")

	require.NoError(t, sandbox.Process.Kill())
	_ = sandbox.Wait()
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{".envrc"}, names(t, dir)) }, 20*time.Second, 10*time.Millisecond,
		"left after the sandbox ended: %v", names(t, dir))
}

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
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// janitorServerEnv names, in the test binary's environment, a directory
// where TestMain plays a server instead of running the tests
// (janitorServer); janitorSandboxEnv, a pid it hands its janitor as a
// sandbox's init.
const (
	janitorServerEnv  = "SUBPROC_TEST_JANITOR_SERVER"
	janitorSandboxEnv = "SUBPROC_TEST_JANITOR_SANDBOX"
	// janitorReleaseEnv has janitorServer release what it reserved before
	// it says it is ready.
	janitorReleaseEnv = "SUBPROC_TEST_JANITOR_RELEASE"
	// janitorMidwayEnv names the stage of making .vscode's placeholder
	// (temporary, renamed) where janitorServer says it is ready and stops,
	// reserving nothing else.
	janitorMidwayEnv = "SUBPROC_TEST_JANITOR_MIDWAY"
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
	if err := subproc.StartJanitor(prog, nil); err != nil {
		return fail(err)
	}
	if stage := os.Getenv(janitorMidwayEnv); stage != "" {
		subproc.SetTestHookMade(func(at string) {
			if at == stage {
				fmt.Println("ready")
				select {}
			}
		})
		_, err := subproc.Reserve(filepath.Join(dir, ".vscode"), true)
		return fail(fmt.Errorf("reserve returned: %w", err))
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
	if os.Getenv(janitorReleaseEnv) != "" {
		subproc.ReleaseAll(held...)
		held = nil
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	subproc.ReleaseAll(held...)
	return 0
}

// janitorServerProc is a running janitorServer.
type janitorServerProc struct {
	cmd    *exec.Cmd
	stderr chan string
}

// startJanitorServer starts janitorServer on dir (with env) and returns it
// once it is ready.
func startJanitorServer(t *testing.T, dir string, env ...string) *janitorServerProc {
	t.Helper()
	cmd := exec.Command(self(t))
	cmd.Env = append([]string{janitorServerEnv + "=" + dir}, env...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = in.Close() })
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	// The janitor inherits the server's standard error: its end is the
	// janitor's.
	errR, errW, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stderr = errW
	require.NoError(t, cmd.Start())
	_ = errW.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &janitorServerProc{cmd: cmd, stderr: make(chan string, 1)}
	go func() {
		b, _ := io.ReadAll(errR)
		_ = errR.Close()
		p.stderr <- string(b)
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	return p
}

// kill kills the server with SIGKILL and returns once its janitor has
// ended, with what the janitor said.
func (p *janitorServerProc) kill(t *testing.T) string {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill())
	_ = p.cmd.Wait()
	select {
	case said := <-p.stderr:
		return said
	case <-time.After(2 * time.Minute):
		t.Fatal("the janitor did not end")
		return ""
	}
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
	said := server.kill(t)

	assert.Equal(t, []string{".claude", ".envrc", "main.go"}, names(t, dir),
		"what the janitor leaves: the placeholder this process holds and the real files")
	assert.Contains(t, said, "up to 1 placeholders", "the one held: said")
	b, err := os.ReadFile(filepath.Join(dir, ".envrc"))
	require.NoError(t, err)
	assert.Equal(t, "export A=1\n", string(b))
	st, err := os.Lstat(filepath.Join(dir, ".claude"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o555, st.Mode(), "the held placeholder, as it was")

	subproc.ReleaseAll(ours)
	assert.ElementsMatch(t, []string{".envrc", "main.go"}, names(t, dir))
}

// TestJanitorEndsTheServersSandboxes (the review's input): a sandbox's
// init takes bubblewrap's parent-death signal only once the view is made,
// so one whose server died while bubblewrap made it lived on, ran its
// command, and could create .git once the placeholders were gone. The
// janitor kills every sandbox it was handed, waits for it to end, and only
// then removes the placeholders.
func TestJanitorEndsTheServersSandboxes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".envrc"), []byte("export A=1\n"), 0o644))
	sandbox := exec.Command("sleep", "600")
	require.NoError(t, sandbox.Start())
	ended := make(chan error, 1)
	go func() { ended <- sandbox.Wait() }()
	t.Cleanup(func() { _ = sandbox.Process.Kill() })

	server := startJanitorServer(t, dir, janitorSandboxEnv+"="+strconv.Itoa(sandbox.Process.Pid))
	server.kill(t)
	// The janitor ended once the sandbox had: its reaping here follows.
	select {
	case err := <-ended:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, "signal: killed", ee.Error(), "the sandbox, killed by the janitor")
	case <-time.After(time.Minute):
		t.Fatal("the janitor ended and the sandbox still runs")
	}
	assert.Equal(t, []string{".envrc"}, names(t, dir), "the placeholders, once the sandbox ended")
}

// TestJanitorRemovesOnlyWhatTheServerMade (the review's input): the
// janitor took the identity of what it found at a reserved path for the
// reserved one, so a user's own pipe named .git, made after the server's
// command had released its placeholder, went at the server's crash; and,
// as root, it removed by path through a workspace a user had swapped for
// a symlink to another directory. It removes only the placeholders the
// server reserved (their device, inode and change time), through the
// directory they were reserved in.
func TestJanitorRemovesOnlyWhatTheServerMade(t *testing.T) {
	base := t.TempDir()
	t.Run("the user's own, made since", func(t *testing.T) {
		dir := filepath.Join(base, "ws")
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".envrc"), []byte("export A=1\n"), 0o644))
		server := startJanitorServer(t, dir, janitorReleaseEnv+"=1")
		require.Equal(t, []string{".envrc"}, names(t, dir), "released")
		plant(t, dir)
		server.kill(t)
		assertPlanted(t, dir)
	})
	t.Run("a workspace swapped for a symlink", func(t *testing.T) {
		dir, moved, victim := filepath.Join(base, "ws2"), filepath.Join(base, "ws2-moved"), filepath.Join(base, "victim")
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".envrc"), []byte("export A=1\n"), 0o644))
		require.NoError(t, os.Mkdir(victim, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(victim, ".envrc"), []byte("export A=1\n"), 0o644))
		plant(t, victim)
		server := startJanitorServer(t, dir)
		require.NoError(t, os.Rename(dir, moved))
		require.NoError(t, os.Symlink(victim, dir))
		server.kill(t)
		assertPlanted(t, victim)
	})
}

// plant makes, in dir, entries shaped like placeholders that no server
// made: a pipe .git of mode 0400 and an empty 0555 .vscode with the mark.
func plant(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, ".git"), 0o400))
	require.NoError(t, os.Chmod(filepath.Join(dir, ".git"), 0o400))
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".vscode"), 0o755))
	require.NoError(t, unix.Setxattr(filepath.Join(dir, ".vscode"), "user.harness.placeholder", []byte("1"), 0))
	require.NoError(t, os.Chmod(filepath.Join(dir, ".vscode"), 0o555))
}

// assertPlanted checks plant's entries are still in dir, as made.
func assertPlanted(t *testing.T, dir string) {
	t.Helper()
	assert.Equal(t, []string{".envrc", ".git", ".vscode"}, names(t, dir))
	st, err := os.Lstat(filepath.Join(dir, ".git"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe|0o400, st.Mode())
	st, err = os.Lstat(filepath.Join(dir, ".vscode"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o555, st.Mode())
}

// TestJanitorRemovesWhatAServerDiedMaking (the review's input): a server
// that died after it made a placeholder and before it held it (one crash
// in 25 under load) left it for good, and one that died before the rename
// left its temporary name (`.harness-placeholder-...`, mode 0700), which
// nothing removes. The janitor hears of a placeholder as soon as it is
// made, and removes it under either name.
func TestJanitorRemovesWhatAServerDiedMaking(t *testing.T) {
	for _, stage := range []string{"temporary", "renamed"} {
		t.Run(stage, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ws")
			require.NoError(t, os.Mkdir(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".envrc"), []byte("export A=1\n"), 0o644))
			server := startJanitorServer(t, dir, janitorMidwayEnv+"="+stage)
			during := names(t, dir)
			require.Len(t, during, 2, "the placeholder, %s: %v", stage, during)
			server.kill(t)
			assert.Equal(t, []string{".envrc"}, names(t, dir))
		})
	}
}

// TestJanitorForgetsWhatWasReleased (the review's input): what the server
// told its janitor of grew with every path ever reserved (150 new
// repositories: the janitor at 10 MB). A release tells the janitor which
// placeholders it removed, and both forget them.
func TestJanitorForgetsWhatWasReleased(t *testing.T) {
	prog, err := subproc.OpenProgram(self(t))
	require.NoError(t, err)
	require.NoError(t, subproc.StartJanitor(prog, nil))
	base := t.TempDir()
	for i := range 200 {
		dir := filepath.Join(base, strconv.Itoa(i))
		require.NoError(t, os.Mkdir(dir, 0o755))
		r, err := subproc.Reserve(filepath.Join(dir, ".vscode"), true)
		require.NoError(t, err)
		require.NotNil(t, r)
		subproc.ReleaseAll(r)
		assert.Empty(t, names(t, dir))
	}
	assert.Zero(t, subproc.JanitorTold(), "paths still known after their release")
}

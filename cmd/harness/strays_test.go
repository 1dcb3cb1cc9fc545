//go:build linux

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestOneShotCommandsLeaveNoProcess: `harness tools`, `harness policy` and
// `harness call read` start the command runner's warm-up (which tries
// bubblewrap) and end at once; nothing they start outlives them. Before,
// one that exited while bubblewrap was being tried killed it half set up,
// and the sandbox's first process waited forever for it (2 to 5 stray
// bwrap processes, each with its namespaces, in 60 runs). The test process
// is made the subreaper of what the commands leave, so a stray is its
// child and no other test's process is counted.
func TestOneShotCommandsLeaveNoProcess(t *testing.T) {
	bin, err := buildOnce()
	require.NoError(t, err)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: the warm-up does not try it")
	}
	w := newE2EWorld(t)
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })

	const runs = 30
	for i := range runs {
		for _, args := range [][]string{
			{"tools", "--workspace", w.ws},
			{"policy", "--workspace", w.ws, "--mode", "workspace-write"},
			{"call", "read", "--workspace", w.ws, "--arg", "file_path=notes.txt"},
		} {
			cmd := exec.Command(bin, args...)
			cmd.Dir = w.ws
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "run %d, %v: %s", i, args, out)
		}
	}
	// A stray was reparented to this process when its parent died; give
	// the last one's parent time to die.
	time.Sleep(200 * time.Millisecond)
	strays := children(t)
	for _, p := range strays {
		_ = unix.Kill(p.pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.pid, &ws, 0, nil)
	}
	assert.Empty(t, strays, "processes left by %d one-shot commands", 3*runs)
}

// proc is one process: its pid and command line.
type proc struct {
	pid     int
	cmdline string
}

// children returns this process's live children, read from /proc, reaping
// those that have ended.
func children(t *testing.T) []proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	me := os.Getpid()
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(me) {
			continue
		}
		if f[0] == "Z" {
			// A process the commands started that has ended since (it
			// was reparented here): reaped, not a stray.
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, proc{pid: pid, cmdline: strings.ReplaceAll(string(cmdline), "\x00", " ")})
	}
	return out
}

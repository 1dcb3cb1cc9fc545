//go:build linux

package subproc_test

import (
	"fmt"
	osexec "os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestBwrapStageUnderItsOwnCaps: the caps are the command's, set by the
// stage just before it execs the shell: a memory cap far below what the
// stage itself holds, or a process cap the user has already passed, still
// starts the command (the stage asks nothing more of the kernel under
// them), and the command is held to them.
func TestBwrapStageUnderItsOwnCaps(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	// An environment the size of a large CI job's: making exec's
	// arguments from it needs more memory than the cap leaves.
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for i := range 400 {
		env = append(env, fmt.Sprintf("V%d=%s", i, strings.Repeat("x", 4096)))
	}
	// A soft descriptor limit below the hard one, as a login shell has
	// (1024): the Go runtime raises it in the stage, the command must get
	// this one back.
	var was syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was))
	if was.Max < 2048 {
		t.Skipf("the hard descriptor limit is %d; this needs one above 2048", was.Max)
	}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 1024, Max: was.Max}))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was) })
	out, err := osexec.Command("/bin/sh", "-c", "ulimit -n").Output()
	require.NoError(t, err)
	nofile := strings.TrimSpace(string(out))
	require.Equal(t, "1024", nofile, "what a shell started the usual way sees")
	for _, lim := range []subproc.RLimits{{}, {Data: 1 << 20}, {Procs: 1}, {Data: 1 << 20, Procs: 1}} {
		for i := range 5 {
			out, stdout, stderr := runBwrap(t.Context(), t, subproc.Spec{
				Command: `echo ok; ulimit -d; ulimit -p; ulimit -n`,
				Dir:     ws,
				Env:     env,
				Confine: &subproc.Confinement{Limits: lim},
			}, time.Minute)
			if !assert.True(t, out.Status.Started, "%+v run %d: %s %s", lim, i, out.Status.Error, stderr) ||
				!assert.Equal(t, 0, out.Status.ExitCode, "%+v run %d: %s", lim, i, stderr) {
				return
			}
			lines := strings.Split(stdout, "\n")
			if !assert.Len(t, lines, 5, stdout) {
				return
			}
			assert.Equal(t, "ok", lines[0])
			if lim.Data > 0 {
				assert.Equal(t, "1024", lines[1], "the memory cap in KiB")
			}
			if lim.Procs > 0 {
				assert.Equal(t, "1", lines[2], "the process cap")
			}
			assert.Equal(t, nofile, lines[3], "the descriptor limit the sandbox started with, not the one Go raised in the stage")
		}
	}
}

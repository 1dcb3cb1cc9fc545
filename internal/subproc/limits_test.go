package subproc_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
	for _, lim := range []subproc.RLimits{{Data: 1 << 20}, {Procs: 1}, {Data: 1 << 20, Procs: 1}} {
		for i := range 5 {
			out, stdout, stderr := runBwrap(t.Context(), t, subproc.Spec{
				Command: `echo ok; ulimit -d; ulimit -p`,
				Dir:     ws,
				Env:     env,
				Confine: &subproc.Confinement{Limits: lim},
			}, time.Minute)
			if !assert.True(t, out.Status.Started, "%+v run %d: %s %s", lim, i, out.Status.Error, stderr) ||
				!assert.Equal(t, 0, out.Status.ExitCode, "%+v run %d: %s", lim, i, stderr) {
				return
			}
			lines := strings.Split(stdout, "\n")
			if !assert.Len(t, lines, 4, stdout) {
				return
			}
			assert.Equal(t, "ok", lines[0])
			if lim.Data > 0 {
				assert.Equal(t, "1024", lines[1], "the memory cap in KiB")
			}
			if lim.Procs > 0 {
				assert.Equal(t, "1", lines[2], "the process cap")
			}
		}
	}
}

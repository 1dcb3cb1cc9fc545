//go:build linux

package subproc_test

import (
	"context"
	"os/signal"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestCommandsStartWithDefaultSignals: a server started with SIGINT,
// SIGQUIT and SIGPIPE ignored (a background job of a non-interactive shell
// ignores the first two) starts its commands with every signal at its
// default action and none blocked, under each isolation: the command's
// /proc/self/status shows no ignored and no blocked signal of the three.
// Before, bubblewrap's commands inherited the ignored SIGINT, and Ctrl-C on
// their terminal interrupted nothing (TestTerminal failed when the tests
// ran as a background job).
func TestCommandsStartWithDefaultSignals(t *testing.T) {
	requireLandlock(t)
	ignored := []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE}
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	t.Cleanup(func() { signal.Reset(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE) })
	status := regexp.MustCompile(`(?m)^Sig(Ign|Blk):\s*([0-9a-f]+)$`)
	for _, r := range isolations(t) {
		t.Run(r.name, func(t *testing.T) {
			spec := subproc.Spec{Command: "grep -E '^Sig(Ign|Blk):' /proc/self/status", Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			out, err := r.run(ctx, spec, subproc.Watch{})
			require.NoError(t, err)
			require.Equal(t, 0, out.Status.ExitCode, "%s %s", out.Status.Error, out.Stderr.String())
			found := status.FindAllStringSubmatch(out.Stdout.String(), -1)
			require.Len(t, found, 2, "the command's signal masks: %q", out.Stdout.String())
			for _, m := range found {
				mask, err := strconv.ParseUint(m[2], 16, 64)
				require.NoError(t, err)
				for _, sig := range ignored {
					assert.Zero(t, mask&(1<<(uint(sig)-1)), "Sig%s holds %v: %q", m[1], sig, out.Stdout.String())
				}
			}
		})
	}
}

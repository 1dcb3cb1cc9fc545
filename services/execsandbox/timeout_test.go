//go:build linux

package execsandbox_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestTimeoutBeforeTheStartIsATimeout: a timeout that passes while the
// command's view is still being searched for and made (a loaded machine, a
// large tree, or a timeout shorter than any start) is the command timing
// out, with nothing run: a result with TimedOut, not an error that blames
// the search ("protected-path scan: ... context deadline exceeded"), which
// the exec tool rendered as a failed start.
func TestTimeoutBeforeTheStartIsATimeout(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	f, pol := newFixture(t)
	for _, iso := range []struct {
		name string
		cfg  execsandbox.Config
	}{{"bwrap", execsandbox.Config{}}, {"landlock", execsandbox.Config{Isolation: execsandbox.IsolationLandlock}}} {
		t.Run(iso.name, func(t *testing.T) {
			r, err := execsandbox.New(iso.cfg, exec.Config{}, pol)
			require.NoError(t, err)
			for _, timeout := range []time.Duration{time.Nanosecond} {
				mark := filepath.Join(f.ws, "ran-"+iso.name+"-"+timeout.String())
				res, err := r.Run(t.Context(), exec.Request{
					Command: "touch " + mark, Workdir: f.ws, Timeout: timeout,
					Policy: carried(pol, sandbox.WorkspaceWrite, f.ws),
				})
				require.NoError(t, err, "timeout %s", timeout)
				assert.True(t, res.TimedOut, "timeout %s", timeout)
				assert.Equal(t, -1, res.ExitCode, "timeout %s", timeout)
				assert.NoFileExists(t, mark, "timeout %s: the command ran", timeout)
			}
			// A refusal stays one, however short the timeout: only a search
			// the timeout cut is a timeout.
			for _, req := range []exec.Request{
				{Command: "true", Workdir: "relative", Timeout: time.Nanosecond, Policy: carried(pol, sandbox.WorkspaceWrite, f.ws)},
				{Command: "true", Workdir: f.ws, Timeout: time.Nanosecond},
			} {
				_, err := r.Run(t.Context(), req)
				var ee *exec.Error
				require.ErrorAs(t, err, &ee)
				assert.EqualValues(t, exec.CodeInvalidRequest, ee.Code, ee.Message)
			}
		})
	}
}

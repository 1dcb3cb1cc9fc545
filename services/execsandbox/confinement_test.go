//go:build linux

package execsandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// The result says how the command was confined, and the uid it reports is
// the owner of what the command created.
func TestRunReportsTheConfinement(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	cases := []struct {
		name      string
		cfg       execsandbox.Config
		mode      sandbox.Mode
		want      *exec.Confinement
		wantOwner bool
	}{
		{
			"bubblewrap, network denied, Unix sockets allowed",
			execsandbox.Config{UnixSockets: true},
			sandbox.WorkspaceWrite,
			&exec.Confinement{UnixSockets: true, ReadOnlyMounts: true, UID: uint32(os.Geteuid())}, true,
		},
		{
			"bubblewrap read-only, network allowed",
			execsandbox.Config{Network: true},
			sandbox.ReadOnly,
			&exec.Confinement{Network: true, OwnUnixSockets: true, ReadOnlyMounts: true, UID: uint32(os.Geteuid())}, false,
		},
		{
			"Landlock alone",
			execsandbox.Config{Isolation: execsandbox.IsolationLandlock},
			sandbox.WorkspaceWrite,
			&exec.Confinement{UID: uint32(os.Geteuid()), Capable: os.Geteuid() == 0, OwnUnixSockets: subproc.Probe().ResolveUnix}, true,
		},
		{
			"danger-full-access runs in bubblewrap for deny-read, with the network and, none named, its own Unix sockets only",
			execsandbox.Config{},
			sandbox.DangerFullAccess,
			&exec.Confinement{Network: true, OwnUnixSockets: true, UID: uint32(os.Geteuid())}, true,
		},
		{
			"danger-full-access under Landlock alone runs unconfined when nothing is to be hidden",
			execsandbox.Config{Isolation: execsandbox.IsolationLandlock},
			sandbox.DangerFullAccess,
			nil, true,
		},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, pol := newFixture(t)
			r, err := execsandbox.New(c.cfg, exec.Config{}, pol)
			require.NoError(t, err)
			made := filepath.Join(f.ws, "made")
			res, err := r.Run(t.Context(), exec.Request{Command: "touch made", Workdir: f.ws, Timeout: time.Minute, Policy: carried(pol, c.mode, f.ws)})
			if ee, ok := errors.AsType[*exec.Error](err); ok && ee.Code == exec.CodeUnavailable {
				t.Skip("the sandbox cannot run here: " + ee.Message)
			}
			require.NoError(t, err, "case %d", i)
			if c.want == nil {
				assert.Nil(t, res.Confinement)
			} else {
				require.NotNil(t, res.Confinement)
				got := *res.Confinement
				require.NotEmpty(t, got.GIDs)
				// The workspace is the server user's: commands run as it.
				assert.Equal(t, uint32(os.Getegid()), got.GIDs[0], "the primary group first")
				got.GIDs = nil
				if got.UID == 0 && got.ReadOnlyMounts {
					// Root's own workspace under bubblewrap: root's
					// secrets are masked (TestRootWorkspaceCommandsReadNoRootSecret).
					if _, err := os.Stat("/etc/shadow"); err == nil {
						assert.Contains(t, got.Masked, "/etc/shadow")
					}
					got.Masked = nil
				}
				if c.mode == sandbox.WorkspaceWrite && got.ReadOnlyMounts {
					// The workspace's missing .git and host-run files are
					// held while the command runs.
					assert.Contains(t, got.Reserved, filepath.Join(f.ws, ".git"))
				}
				got.Reserved = nil
				assert.Equal(t, *c.want, got)
			}
			if !c.wantOwner {
				assert.NotEqual(t, 0, res.ExitCode, "read-only refuses the workspace")
				assert.NoFileExists(t, made)
				return
			}
			require.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
			info, err := os.Stat(made)
			require.NoError(t, err)
			assert.EqualValues(t, os.Geteuid(), info.Sys().(*syscall.Stat_t).Uid, "the command ran as the uid reported")
		})
	}
}

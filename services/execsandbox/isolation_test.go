//go:build linux

package execsandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestBwrapMissingRefusesConfinedCommands (issue 22): where bubblewrap is
// not on PATH, or only inside a writable root (where a command could have
// put it), a confined command is refused with the reason and the remedy and
// nothing runs; danger-full-access still runs; the Landlock isolation runs
// without it.
func TestBwrapMissingRefusesConfinedCommands(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	installed, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed: nothing to hide")
	}
	f, pol := newFixture(t)
	planted := filepath.Join(f.cache, "bin")
	require.NoError(t, os.Mkdir(planted, 0o755))
	body, err := os.ReadFile(installed)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(planted, "bwrap"), body, 0o755))

	for _, c := range []struct{ name, path string }{
		{"no bwrap on PATH", "/nonexistent"},
		{"bwrap only inside a writable root", planted},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PATH", c.path)
			r, err := execsandbox.New(execsandbox.Config{}, hexec.Config{}, pol)
			require.NoError(t, err)
			for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
				marker := filepath.Join(f.ws, "ran-"+string(mode))
				_, err := r.Run(t.Context(), hexec.Request{
					Command: "/bin/touch " + marker, Workdir: f.ws, Timeout: time.Minute,
					Policy: carried(pol, mode, f.ws),
				})
				var ee *hexec.Error
				require.True(t, errors.As(err, &ee), "want a runner error, got %v", err)
				assert.EqualValues(t, hexec.CodeUnavailable, ee.Code)
				assert.Contains(t, ee.Message, "bubblewrap")
				assert.Contains(t, ee.Message, "apt-get install bubblewrap")
				assert.Contains(t, ee.Message, "--exec-isolation landlock")
				assert.NoFileExists(t, marker)
			}
			iso := r.Isolation()
			assert.Contains(t, iso.Unavailable, "bubblewrap")

			res, err := r.Run(t.Context(), hexec.Request{
				Command: "/bin/touch " + filepath.Join(f.outside, "danger"), Workdir: f.ws, Timeout: time.Minute,
				Policy: carried(pol, sandbox.DangerFullAccess, f.ws),
			})
			require.NoError(t, err)
			assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
			assert.FileExists(t, filepath.Join(f.outside, "danger"))
			require.NoError(t, os.Remove(filepath.Join(f.outside, "danger")))

			ll, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, hexec.Config{}, pol)
			require.NoError(t, err)
			res, err = ll.Run(t.Context(), hexec.Request{
				Command: "/bin/touch landlock-ran; /bin/touch " + filepath.Join(f.outside, "escape"), Workdir: f.ws, Timeout: time.Minute,
				Policy: carried(pol, sandbox.WorkspaceWrite, f.ws),
			})
			require.NoError(t, err)
			assert.NotEqual(t, 0, res.ExitCode)
			assert.FileExists(t, filepath.Join(f.ws, "landlock-ran"))
			assert.NoFileExists(t, filepath.Join(f.outside, "escape"))
			assert.NotEmpty(t, ll.Isolation().NotCovered)
		})
	}
}

// TestNewRefusesBadIsolationAndCaps: an unknown isolation and caps below
// -1 are configuration errors.
func TestNewRefusesBadIsolationAndCaps(t *testing.T) {
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{TempRoots: []string{}})
	require.NoError(t, err)
	for _, cfg := range []execsandbox.Config{{Isolation: "docker"}, {Memory: -2}, {Pids: -5}} {
		_, err := execsandbox.New(cfg, hexec.Config{}, pol)
		var ee *hexec.Error
		require.True(t, errors.As(err, &ee), "%+v", cfg)
		assert.EqualValues(t, hexec.CodeInvalidRequest, ee.Code)
	}
}

// TestWarmThenChange: Warm fills the search's cache (its speed is in
// docs/benchmarks.md); what changes after it is still found: a .git made
// after the warm-up, in a directory the warm-up read, is read-only to the
// next command.
func TestWarmThenChange(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	f, pol := newFixture(t)
	big := filepath.Join(f.ws, "big")
	require.NoError(t, os.Mkdir(big, 0o755))
	for i := range 2000 {
		fd, err := os.Create(filepath.Join(big, "f"+strconv.Itoa(i)))
		require.NoError(t, err)
		require.NoError(t, fd.Close())
	}
	r, err := execsandbox.New(execsandbox.Config{}, hexec.Config{}, pol)
	require.NoError(t, err)
	r.Warm(t.Context())
	require.NoError(t, os.MkdirAll(filepath.Join(big, "nested", ".git"), 0o755))
	res, err := r.Run(t.Context(), hexec.Request{
		Command: "echo x > big/nested/.git/config", Workdir: f.ws, Timeout: time.Minute,
		Policy: carried(pol, sandbox.WorkspaceWrite, f.ws),
	})
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Contains(t, res.Stderr.Text, "Read-only file system")
	assert.NoFileExists(t, filepath.Join(big, "nested", ".git", "config"))
}

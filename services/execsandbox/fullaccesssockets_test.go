//go:build linux

package execsandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestFullAccessUnixSockets (review of issue 24, F4): under
// danger-full-access with deny-read on, a command reaches the named socket
// only; a host socket beside it (under /var/tmp) and one under /tmp (a
// user daemon's, like tmux's) accept nothing. With none named none of the
// three is reached (the command may make sockets of its own, issue 36),
// as in the other modes; --unix-sockets allow is the control that reaches
// all three.
func TestFullAccessUnixSockets(t *testing.T) {
	requireBwrapAndLandlock(t)
	perl := fixtures.Perl(t)
	resolve := subproc.Probe().ResolveUnix
	for _, c := range []struct {
		name string
		cfg  func(named string) execsandbox.Config
		// want is what the command gets from the named, beside and /tmp
		// sockets.
		want [3]string
		// named says whether the named socket is in the Confinement.
		named bool
	}{
		{
			"named only", func(n string) execsandbox.Config { return execsandbox.Config{UnixSocketPaths: []string{n}} },
			[3]string{"OK pong hi", failure(resolve), failure(resolve)},
			true,
		},
		{
			"none named", func(string) execsandbox.Config { return execsandbox.Config{} },
			[3]string{failure(resolve), failure(resolve), failure(resolve)},
			false,
		},
		{
			"--unix-sockets allow (the control)", func(string) execsandbox.Config { return execsandbox.Config{UnixSockets: true} },
			[3]string{"OK pong hi", "OK pong hi", "OK pong hi"},
			false,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, pol := newSecretHome(t, primaryOwner())
			out := fixtures.OutsideDir(t)
			require.NoError(t, os.Chmod(out, 0o755))
			tmp, err := os.MkdirTemp("/tmp", "harness-fullaccess-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(tmp) })
			require.NoError(t, os.Chmod(tmp, 0o755))
			listeners := []*fixtures.UnixListener{
				fixtures.ListenUnix(t, filepath.Join(out, "agent.sock")),
				fixtures.ListenUnix(t, filepath.Join(out, "docker.sock")),
				fixtures.ListenUnix(t, filepath.Join(tmp, "default")),
			}
			r, err := execsandbox.New(c.cfg(listeners[0].Path), exec.Config{}, pol)
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Close() })
			res, err := r.Run(t.Context(), exec.Request{
				Command: fixtures.ConnectUnix(perl, "hi", listeners[0].Path, listeners[1].Path, listeners[2].Path) + "; cat " + s.key,
				Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.DangerFullAccess, s.ws),
			})
			require.NoError(t, err)
			assert.NotContains(t, res.Stdout.Text, s.marker, "deny-read holds")
			got := connected(res.Stdout.Text)
			for i, l := range listeners {
				assert.Equal(t, c.want[i], got[l.Path], "%s: %s%s", l.Path, res.Stdout.Text, res.Stderr.Text)
				n, lines := l.Accepted()
				if strings.HasPrefix(c.want[i], "OK") {
					assert.Equal(t, 1, n, l.Path)
				} else {
					assert.Zero(t, n, "%s accepted %v", l.Path, lines)
				}
			}
			require.NotNil(t, res.Confinement)
			assert.Equal(t, c.cfg("").UnixSockets, res.Confinement.UnixSockets)
			if c.named {
				assert.Equal(t, []string{listeners[0].Path}, res.Confinement.UnixSocketPaths)
			} else {
				assert.Empty(t, res.Confinement.UnixSocketPaths)
			}
		})
	}
}

//go:build linux

package execsandbox_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestSocketBehindAShutDirectory (issue 37's review): a host process's
// socket in a directory the command's user owns stays masked when an
// earlier command shut that directory (chmod 000, or 0400, which also
// shuts it to an ordinary server): the socket is found unreachable at the
// next start only because the command made it so, and it would open the
// directory again and connect. Each command either fails to connect or is
// not run; the listener accepts nothing. As root for both owners, and as
// the test's own user.
func TestSocketBehindAShutDirectory(t *testing.T) {
	longTest(t)
	// Short names throughout: a socket's path holds at most 107 bytes, and
	// t.TempDir's holds the test's name (the unprivileged pass's temp is
	// under its home).
	for _, o := range owners() {
		for _, mode := range []os.FileMode{0o000, 0o400} {
			t.Run(fmt.Sprintf("%d-%03o", o.uid, uint32(mode.Perm())), func(t *testing.T) {
				w := newWorld(t, o, exec.Config{}, nil)
				run := filepath.Join(w.ws, "r")
				require.NoError(t, os.Mkdir(run, 0o700))
				sock := filepath.Join(run, "s")
				ln, err := net.Listen("unix", sock)
				require.NoError(t, err)
				defer ln.Close() //nolint:errcheck // test listener
				var accepted atomic.Int64
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						accepted.Add(1)
						_ = c.Close()
					}
				}()
				require.NoError(t, os.Chmod(sock, 0o600))
				require.NoError(t, chownTo(sock, o.uid))
				require.NoError(t, chownTo(run, o.uid))
				defer os.Chmod(run, 0o700) //nolint:errcheck // let t.TempDir remove it

				connect := `python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("CONNECTED")
except OSError as e:
    print("refused", e)' ` + sock
				res := w.run(t, sandbox.WorkspaceWrite, connect)
				assert.NotContains(t, res.Stdout.Text, "CONNECTED", "the socket is masked at first")
				res = w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf("chmod %03o %s; stat -c %%a %s", uint32(mode.Perm()), run, run))
				t.Logf("shut: %q %q", res.Stdout.Text, res.Stderr.Text)
				res, err = w.try(t.Context(), sandbox.WorkspaceWrite, "chmod 700 "+run+" && "+connect, time.Minute)
				t.Logf("again: err %v, %q %q", err, res.Stdout.Text, res.Stderr.Text)
				assert.NotContains(t, res.Stdout.Text, "CONNECTED", "the shut directory's socket was left unmasked")
				assert.Zero(t, accepted.Load(), "the host listener accepted a connection from a command")
			})
		}
	}
}

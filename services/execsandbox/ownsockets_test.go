package execsandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// ownSocketsScript binds, listens on and connects to a socket in the
// workspace and one in $TMPDIR (the session's temp), each exchanging a
// line, as a test suite or an asyncio server does; then it tries each host
// socket named on its command line.
const ownSocketsScript = `import os, socket, sys, tempfile
def own(path):
    try:
        if os.path.exists(path): os.unlink(path)
        srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1)
        c = socket.socket(socket.AF_UNIX); c.connect(path); a, _ = srv.accept()
        c.sendall(b"ping"); print("own", path, "OK", a.recv(4).decode())
        os.unlink(path)
    except OSError as e:
        print("own", path, "FAIL", e.strerror)
own("own.sock")
own(os.path.join(tempfile.gettempdir(), "own.sock"))
for p in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(p); s.sendall(b"hi\n"); print("host", p, "OK")
    except OSError as e:
        print("host", p, "FAIL", e.strerror)
`

// TestOwnUnixSockets (issue 36): under the default --unix-sockets deny a
// command binds, listens on and connects to sockets of its own in its
// workspace and temp (Python, and Node's net.Server); sockets the host
// bound (in the workspace before the command, and outside every root),
// and an earlier command's, stay out of reach and receive nothing.
func TestOwnUnixSockets(t *testing.T) {
	py := python3(t)
	w := newWorld(t, primaryOwner(), hexec.Config{}, nil)
	out := fixtures.OutsideDir(t)
	require.NoError(t, os.Chmod(out, 0o755))
	outside := fixtures.ListenUnix(t, filepath.Join(out, "host.sock"))
	inner := fixtures.ListenUnix(t, filepath.Join(w.ws, "host.sock"))
	require.NoError(t, os.Chmod(outside.Path, 0o777))
	require.NoError(t, os.Chmod(inner.Path, 0o777))
	script := filepath.Join(w.cache, "own.py")
	require.NoError(t, os.WriteFile(script, []byte(ownSocketsScript), 0o644))
	require.NoError(t, os.Chmod(w.cache, 0o755))

	res := w.run(t, sandbox.WorkspaceWrite, py+" "+script+" "+outside.Path+" "+inner.Path)
	t.Logf("stdout %s\nstderr %s", res.Stdout.Text, res.Stderr.Text)
	assert.Contains(t, res.Stdout.Text, "own own.sock OK ping\n")
	// $TMPDIR's (the workspace when the session has no temp: Python falls
	// back to it).
	assert.Regexp(t, `own /\S+/own\.sock OK ping\n`, res.Stdout.Text)
	assert.Contains(t, res.Stdout.Text, "host "+outside.Path+" FAIL")
	assert.Contains(t, res.Stdout.Text, "host "+inner.Path+" FAIL")
	for _, l := range []*fixtures.UnixListener{outside, inner} {
		n, lines := l.Accepted()
		assert.Zero(t, n, "%s accepted a connection", l.Path)
		assert.Empty(t, lines)
	}
	require.NotNil(t, res.Confinement)
	assert.True(t, res.Confinement.OwnUnixSockets)

	if node, err := exec.LookPath("node"); err == nil {
		res := w.run(t, sandbox.WorkspaceWrite, node+` -e 'const s=require("net").createServer(c=>c.end("pong")).listen("n.sock",()=>require("net").connect("n.sock").on("data",d=>{console.log("node "+d);s.close()}))'`)
		assert.Equal(t, "node pong\n", res.Stdout.Text, res.Stderr.Text)
	}

	// A server an earlier command of the session runs is masked for a
	// later one like the host's (no path in a listing tells the session's
	// own sockets from the host's safely: README), and receives nothing.
	serve := `import os, socket, time
srv = socket.socket(socket.AF_UNIX); srv.bind("srv.sock"); srv.listen(4); srv.settimeout(0.2)
end, n = time.time() + 50, 0
while time.time() < end and not os.path.exists("stop"):
    try:
        c, _ = srv.accept(); n += 1; c.close()
    except socket.timeout:
        pass
os.unlink("srv.sock")
print("accepted", n)
`
	require.NoError(t, os.WriteFile(filepath.Join(w.cache, "serve.py"), []byte(serve), 0o644))
	done := make(chan hexec.Result, 1)
	go func() {
		res, _ := w.try(t.Context(), sandbox.WorkspaceWrite, py+" "+filepath.Join(w.cache, "serve.py"), time.Minute)
		done <- res
	}()
	require.Eventually(t, func() bool {
		_, err := os.Lstat(filepath.Join(w.ws, "srv.sock"))
		return err == nil
	}, 30*time.Second, 20*time.Millisecond)
	res = w.run(t, sandbox.WorkspaceWrite, py+` -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("srv.sock")'; touch stop`)
	assert.Contains(t, res.Stderr.Text, "Connection refused")
	first := <-done
	assert.Equal(t, "accepted 0\n", first.Stdout.Text, first.Stderr.Text)
	assert.False(t, strings.Contains(first.Stderr.Text, "Traceback"), first.Stderr.Text)
}

//go:build linux

package execsandbox_test

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
// workspace and temp (Python, and Node's net.Server), and a later command
// of the session reaches a server an earlier one runs; sockets the host
// bound (in the workspace before the command, and outside every root) stay
// out of reach and receive nothing, also when an earlier command swaps
// what the path it bound names (review of issue 36: a symlink or a
// rename after the bind).
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

	// A server an earlier command of the session runs is reached by a
	// later one (the kernel names the files the session's sockets are bound
	// to); the earlier command then swaps what the bound path names (a
	// symlinked directory pointed at the host's socket directory, a
	// directory renamed over by one holding the host's socket in the
	// workspace): a later command reaches none of the host's sockets.
	serve := `import os, socket, time
os.mkdir("r1"); os.symlink("r1", "lnk"); os.mkdir("own")
srv = socket.socket(socket.AF_UNIX); srv.bind("srv.sock"); srv.listen(4); srv.settimeout(0.2)
s2 = socket.socket(socket.AF_UNIX); s2.bind("lnk/host.sock"); s2.listen(1)
s3 = socket.socket(socket.AF_UNIX); s3.bind("own/host.sock"); s3.listen(1)
open("ready", "w").close()
end, n = time.time() + 50, 0
while time.time() < end and not os.path.exists("stop"):
    if os.path.exists("swap") and os.path.isdir("r1"):
        os.unlink("lnk"); os.symlink(OUTDIR, "lnk"); os.rename("r1", "r1.old")
        try:
            os.rename("own", "own.old"); os.rename("hd", "own")
        except OSError as e:
            print("rename", e.strerror)
        open("swapped", "w").close()
    try:
        c, _ = srv.accept(); n += 1; c.recv(16); c.sendall(b"served\n"); c.close()
    except socket.timeout:
        pass
print("accepted", n)
`
	hd := filepath.Join(w.ws, "hd")
	require.NoError(t, os.Mkdir(hd, 0o755))
	inHD := fixtures.ListenUnix(t, filepath.Join(hd, "host.sock"))
	require.NoError(t, os.Chmod(inHD.Path, 0o777))
	serve = strings.ReplaceAll(serve, "OUTDIR", strconv.Quote(out))
	require.NoError(t, os.WriteFile(filepath.Join(w.cache, "serve.py"), []byte(serve), 0o644))
	if os.Geteuid() == 0 && primaryOwner().uid != 0 {
		require.NoError(t, chownTree(w.ws, primaryOwner().uid))
	}
	done := make(chan hexec.Result, 1)
	go func() {
		res, _ := w.try(t.Context(), sandbox.WorkspaceWrite, py+" "+filepath.Join(w.cache, "serve.py"), time.Minute)
		done <- res
	}()
	waitFor := func(name string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, err := os.Lstat(filepath.Join(w.ws, name))
			return err == nil
		}, 30*time.Second, 20*time.Millisecond, "%s never came", name)
	}
	waitFor("ready")
	connect := py + ` -c 'import socket,sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX); s.settimeout(2)
    try: s.connect(p); s.sendall(b"hi\n"); print(p, "OK", s.recv(16).decode().strip())
    except OSError as e: print(p, "FAIL", e.strerror)'`
	res = w.run(t, sandbox.WorkspaceWrite, connect+" srv.sock")
	assert.Equal(t, "srv.sock OK served\n", res.Stdout.Text, res.Stderr.Text)
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, "swap"), nil, 0o644))
	waitFor("swapped")
	res = w.run(t, sandbox.WorkspaceWrite, connect+" lnk/host.sock "+filepath.Join(out, "host.sock")+" own/host.sock "+filepath.Join(w.ws, "own", "host.sock")+"; touch stop")
	t.Logf("after the swap: %s%s", res.Stdout.Text, res.Stderr.Text)
	assert.NotContains(t, res.Stdout.Text, " OK")
	for _, l := range []*fixtures.UnixListener{outside, inHD} {
		n, _ := l.Accepted()
		assert.Zero(t, n, "%s accepted a connection", l.Path)
	}
	first := <-done
	// The host's socket directory is pinned in the earlier command's view
	// too: it could not be renamed (TestMaskedSocketDirectoryPinned).
	assert.Equal(t, "rename Device or resource busy\naccepted 1\n", first.Stdout.Text, first.Stderr.Text)
}

// TestMaskedSocketDirectoryPinned (review of issue 36): the directories
// between a writable root and a host socket masked inside it are pinned in
// the command's view, so no command renames them to carry the socket out
// from under the mask of a later command starting meanwhile (a directory
// swap raced a start and reached the host's socket half the time).
func TestMaskedSocketDirectoryPinned(t *testing.T) {
	w := newWorld(t, primaryOwner(), hexec.Config{}, nil)
	hd := filepath.Join(w.ws, "a", "hd")
	require.NoError(t, os.MkdirAll(hd, 0o755))
	host := fixtures.ListenUnix(t, filepath.Join(hd, "host.sock"))
	require.NoError(t, os.Chmod(host.Path, 0o777))
	if os.Geteuid() == 0 && primaryOwner().uid != 0 {
		require.NoError(t, chownTree(w.ws, primaryOwner().uid))
	}
	res := w.run(t, sandbox.WorkspaceWrite, "mv a/hd a/moved; mv a b; ls a")
	t.Logf("stdout %s\nstderr %s", res.Stdout.Text, res.Stderr.Text)
	assert.Equal(t, 2, strings.Count(res.Stderr.Text, "Device or resource busy"), res.Stderr.Text)
	assert.Equal(t, "hd\n", res.Stdout.Text)
	st, err := os.Lstat(host.Path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, st.Mode().Type(), "the host's socket stays where it was")
	n, _ := host.Accepted()
	assert.Zero(t, n)
}

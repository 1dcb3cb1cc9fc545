//go:build linux

package execsandbox_test

import (
	"bufio"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// netnsListener is a Unix socket served by a process in a network
// namespace of its own (another session's dev server, a PrivateNetwork=
// service): the server's /proc/net/unix does not list it.
type netnsListener struct {
	path string
	cmd  *osexec.Cmd
	mu   sync.Mutex
	got  []string // what the process reported: "ACCEPT", "GOT line"
	done chan struct{}
}

// listenInOtherNetns starts perl in a new network namespace (`unshare -n`
// as root, `unshare -rn` for an ordinary user) serving a socket at path
// (mode 0777): each connection it accepts and each line it reads it
// reports on its standard output, and it answers "pong LINE". With
// mountAt, the process has a mount namespace of its own too, where path's
// directory is bound onto mountAt (a container's volume), and binds the
// socket there: its listing names mountAt's path, which on the host is an
// empty directory. It skips where no namespace can be made.
func listenInOtherNetns(t *testing.T, perl, path, mountAt string) *netnsListener {
	t.Helper()
	flags := "-n"
	if mountAt != "" {
		flags += "m"
	}
	if os.Geteuid() != 0 {
		flags = "-r" + flags[1:]
	}
	if err := osexec.Command("unshare", flags, "true").Run(); err != nil {
		t.Skipf("no namespace can be made here (unshare %s): %v", flags, err)
	}
	script := `use IO::Socket::UNIX; $| = 1; unlink $ARGV[0]; ` +
		`$l = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $ARGV[0], Listen => 5) or die "listen: $!"; ` +
		`chmod 0777, $ARGV[0]; print "READY\n"; ` +
		`while ($c = $l->accept) { print "ACCEPT\n"; $line = <$c>; chomp $line; print "GOT $line\n"; print $c "pong $line\n"; close $c }`
	cmd := osexec.Command("unshare", flags, perl, "-e", script, path)
	if mountAt != "" {
		cmd = osexec.Command("unshare", flags, "sh", "-c", `mount --bind "$1" "$2" && exec "$3" -e "$4" "$2/$5"`,
			"sh", filepath.Dir(path), mountAt, perl, script, filepath.Base(path))
	}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	l := &netnsListener{path: path, cmd: cmd, done: make(chan struct{})}
	rd := bufio.NewReader(out)
	ready, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "READY\n", ready)
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			l.mu.Lock()
			l.got = append(l.got, sc.Text())
			l.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, rd)
	}()
	t.Cleanup(l.stop)
	return l
}

// stop ends the listener's process and waits for its report.
func (l *netnsListener) stop() {
	if l.cmd.ProcessState != nil {
		return
	}
	_ = l.cmd.Process.Kill()
	<-l.done
	_ = l.cmd.Wait()
}

// received is what the listener reported once it is stopped.
func (l *netnsListener) received() []string {
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// boundHere reports whether the server's own network namespace lists a
// socket bound at path.
func boundHere(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/unix")
	require.NoError(t, err)
	for l := range strings.SplitSeq(string(b), "\n") {
		if strings.HasSuffix(l, " "+path) {
			return true
		}
	}
	return false
}

// TestUnixSocketsOfOtherNetworkNamespaces (issue 35): with --unix-socket, a
// socket bound in another network namespace (so not in the server's
// /proc/net/unix) is unreachable to a command like every other socket that
// is not named, outside the command's roots (another session's workspace)
// and inside them (a writable root; the workspace under read-only): the
// connect fails and the listener receives no connection and no byte. The
// named socket is reached; --unix-sockets allow is the control showing the
// listeners work.
func TestUnixSocketsOfOtherNetworkNamespaces(t *testing.T) {
	perl := fixtures.Perl(t)
	resolve := subproc.Probe().ResolveUnix
	onlyNamed := func(n string) execsandbox.Config { return execsandbox.Config{UnixSocketPaths: []string{n}} }
	for _, c := range []struct {
		name  string
		cfg   func(named string) execsandbox.Config
		mode  sandbox.Mode
		where func(w world) string // the listener's directory
		mount bool                 // the listener binds it in a mount namespace of its own, at another path
		want  string
	}{
		{"outside the roots", onlyNamed, sandbox.WorkspaceWrite, func(w world) string { return w.outside }, false, failure(resolve)},
		{"in a writable root", onlyNamed, sandbox.WorkspaceWrite, func(w world) string { return w.cache }, false, failure(resolve)},
		{"in the workspace under read-only", onlyNamed, sandbox.ReadOnly, func(w world) string { return w.ws }, false, failure(resolve)},
		{"outside the roots, bound at another path of its mount namespace", onlyNamed, sandbox.WorkspaceWrite, func(w world) string { return w.outside }, true, failure(resolve)},
		{
			"--unix-sockets allow (the control)", func(string) execsandbox.Config { return execsandbox.Config{UnixSockets: true} },
			sandbox.WorkspaceWrite, func(w world) string { return w.outside }, true, strings.Replace(allowedOutside(resolve), "hi", "secret", 1),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The listener binds its socket by its absolute path (what the
			// namespace's socket list then names), which holds at most 107
			// bytes: the world is made under /tmp, not a longer $TMPDIR
			// or $GOTMPDIR (the ordinary user's pass of .ci/run sets both;
			// t.TempDir prefers GOTMPDIR).
			t.Setenv("GOTMPDIR", "/tmp")
			t.Setenv("TMPDIR", "/tmp")
			w := newWorld(t, primaryOwner(), exec.Config{}, nil)
			named := fixtures.ListenUnix(t, filepath.Join(w.outside, "named.sock"))
			mountAt := ""
			if c.mount {
				mountAt = filepath.Join(filepath.Dir(w.ws), "volume")
				require.NoError(t, os.Mkdir(mountAt, 0o755))
			}
			other := listenInOtherNetns(t, perl, filepath.Join(c.where(w), "dev.sock"), mountAt)
			require.False(t, boundHere(t, other.path), "the listener is in the server's network namespace")
			w = withRunner(t, w, c.cfg(named.Path))
			res := w.run(t, c.mode, fixtures.ConnectUnix(perl, "secret", other.path, named.Path))
			got := connected(res.Stdout.Text)
			assert.Equal(t, c.want, got[other.path], "%s%s", res.Stdout.Text, res.Stderr.Text)
			assert.Equal(t, "OK pong secret", got[named.Path], "the named socket")
			rec := other.received()
			if strings.HasPrefix(c.want, "OK") {
				assert.Equal(t, []string{"ACCEPT", "GOT secret"}, rec)
			} else {
				assert.Empty(t, rec, "the listener in the other namespace was reached")
			}
		})
	}
}

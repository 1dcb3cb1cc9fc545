//go:build linux

package execsandbox_test

import (
	"errors"
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

// sockets are the listeners of a named-socket test: the named one and a
// second beside it, outside every writable root (under /var/tmp), a third
// in a writable root, and a fourth in a directory of the test's user of
// mode 0700, all made before the command.
type sockets struct {
	named, beside, inner, private *fixtures.UnixListener
	// link is a symlink to the named socket, the path it is named by.
	link string
}

func newSockets(t *testing.T, w world) sockets {
	t.Helper()
	out := fixtures.OutsideDir(t)
	require.NoError(t, os.Chmod(out, 0o755)) // the workspace owner reaches it
	s := sockets{
		named:  fixtures.ListenUnix(t, filepath.Join(out, "named.sock")),
		beside: fixtures.ListenUnix(t, filepath.Join(out, "beside.sock")),
		inner:  fixtures.ListenUnix(t, filepath.Join(w.cache, "inner.sock")),
		// A root server's commands run as the workspace owner, who
		// cannot search this directory: bwrap could not mask the socket
		// (nor would the command reach it); the command still starts.
		private: fixtures.ListenUnix(t, filepath.Join(fixtures.OutsideDir(t), "private.sock")),
		link:    filepath.Join(out, "agent.sock"),
	}
	require.NoError(t, os.Symlink(s.named.Path, s.link))
	return s
}

// connected parses fixtures.ConnectUnix's output: path to "OK pong LINE" or
// "FAIL error".
func connected(stdout string) map[string]string {
	out := map[string]string{}
	for l := range strings.SplitSeq(strings.TrimSpace(stdout), "\n") {
		if i := strings.Index(l, " "); i > 0 {
			out[l[:i]] = l[i+1:]
		}
	}
	return out
}

// accepted is how many connections l accepted, with the lines it read.
func accepted(l *fixtures.UnixListener) int {
	n, _ := l.Accepted()
	return n
}

// TestNamedUnixSockets (issue 24): with --unix-socket, a command reaches the
// named socket and exchanges bytes with it, and neither the socket beside it
// nor one in a writable root (which receive nothing); --unix-sockets deny
// with none named still reaches none of them (a command's own sockets
// work: TestOwnUnixSockets); --unix-sockets allow is the
// control showing the others are reachable without the names.
func TestNamedUnixSockets(t *testing.T) {
	longTest(t)
	perl := fixtures.Perl(t)
	resolve := subproc.Probe().ResolveUnix
	for _, c := range []struct {
		name string
		cfg  func(s sockets) execsandbox.Config
		// want is what the command gets from the named, beside, inner
		// and private sockets.
		want [4]string
		// named is the Confinement's UnixSocketPaths.
		named func(s sockets) []string
	}{
		{
			"named only",
			func(s sockets) execsandbox.Config { return execsandbox.Config{UnixSocketPaths: []string{s.link}} },
			[4]string{"OK pong hi", failure(resolve), failure(resolve), privately(failure(resolve))},
			func(s sockets) []string { return []string{s.named.Path} },
		},
		{
			"none named under --unix-sockets deny",
			func(sockets) execsandbox.Config { return execsandbox.Config{} },
			[4]string{failure(resolve), failure(resolve), failure(resolve), privately(failure(resolve))},
			func(sockets) []string { return nil },
		},
		{
			"--unix-sockets allow (the control)",
			func(sockets) execsandbox.Config { return execsandbox.Config{UnixSockets: true} },
			[4]string{allowedOutside(resolve), allowedOutside(resolve), "OK pong hi", privately(allowedOutside(resolve))},
			func(sockets) []string { return nil },
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, primaryOwner(), exec.Config{}, nil)
			s := newSockets(t, w)
			w = withRunner(t, w, c.cfg(s))
			res := w.run(t, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "hi", s.named.Path, s.beside.Path, s.inner.Path, s.private.Path))
			got := connected(res.Stdout.Text)
			for i, l := range []*fixtures.UnixListener{s.named, s.beside, s.inner, s.private} {
				assert.Equal(t, c.want[i], got[l.Path], "%s: %s%s", l.Path, res.Stdout.Text, res.Stderr.Text)
				n, lines := l.Accepted()
				if strings.HasPrefix(c.want[i], "OK") {
					assert.Equal(t, 1, n, l.Path)
					assert.Equal(t, []string{"hi"}, lines, l.Path)
				} else {
					assert.Zero(t, n, "%s accepted a connection", l.Path)
					assert.Empty(t, lines, l.Path)
				}
			}
			require.NotNil(t, res.Confinement)
			assert.Equal(t, c.named(s), res.Confinement.UnixSocketPaths)
		})
	}
}

// failure is how a connect to a socket that is not named fails: Landlock
// ABI 9 refuses it (EACCES); below it the socket is masked by /dev/null
// (ECONNREFUSED).
func failure(resolveUnix bool) string {
	if resolveUnix {
		return "FAIL Permission denied"
	}
	return "FAIL Connection refused"
}

// privately is what a command gets from the socket in the test user's
// 0700 directory: want, when it runs as that user; else the directory
// refuses it (a root server runs it as the workspace owner).
func privately(want string) string {
	if primaryOwner().uid != os.Geteuid() {
		return "FAIL Permission denied"
	}
	return want
}

// allowedOutside is what --unix-sockets allow gives a socket outside the
// writable roots: reachable, unless Landlock ABI 9 limits it to sockets
// beneath them.
func allowedOutside(resolveUnix bool) string {
	if resolveUnix {
		return "FAIL Permission denied"
	}
	return "OK pong hi"
}

// A named socket whose server restarted at the same path (a new socket) is
// the one a later command reaches: each command resolves the names again.
func TestNamedUnixSocketRestarted(t *testing.T) {
	perl := fixtures.Perl(t)
	w := newWorld(t, primaryOwner(), exec.Config{}, nil)
	dir := fixtures.OutsideDir(t)
	require.NoError(t, os.Chmod(dir, 0o755))
	path := filepath.Join(dir, "agent.sock")
	first := fixtures.ListenUnix(t, path)
	w = withRunner(t, w, execsandbox.Config{UnixSocketPaths: []string{path}})
	res := w.run(t, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "one", path))
	assert.Equal(t, "OK pong one", connected(res.Stdout.Text)[path], res.Stderr.Text)
	first.Close()
	second := fixtures.ListenUnix(t, path)
	res = w.run(t, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "two", path))
	assert.Equal(t, "OK pong two", connected(res.Stdout.Text)[path], res.Stderr.Text)
	assert.Equal(t, 1, accepted(first))
	assert.Equal(t, 1, accepted(second))
}

// Under --exec-isolation landlock, below Landlock ABI 9, commands with named
// sockets are refused with the cause and the remedy, and nothing runs.
func TestNamedUnixSocketsLandlockIsolation(t *testing.T) {
	perl := fixtures.Perl(t)
	f, pol := newFixture(t)
	out := fixtures.OutsideDir(t)
	named := fixtures.ListenUnix(t, filepath.Join(out, "named.sock"))
	beside := fixtures.ListenUnix(t, filepath.Join(out, "beside.sock"))
	r, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock, UnixSocketPaths: []string{named.Path}}, exec.Config{}, pol)
	require.NoError(t, err)
	made := filepath.Join(f.ws, "made")
	res, err := r.Run(t.Context(), exec.Request{
		Command: "touch made; " + fixtures.ConnectUnix(perl, "hi", named.Path, beside.Path), Workdir: f.ws, Timeout: time.Minute,
		Policy: carried(pol, sandbox.WorkspaceWrite, f.ws),
	})
	iso := r.Isolation()
	if subproc.Probe().ResolveUnix {
		require.NoError(t, err)
		got := connected(res.Stdout.Text)
		assert.Equal(t, "OK pong hi", got[named.Path])
		assert.Equal(t, "FAIL Permission denied", got[beside.Path])
		assert.Contains(t, iso.NamedSockets, "kernel-enforced")
		return
	}
	var ee *exec.Error
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, exec.CodeUnavailable, ee.Code)
	assert.Contains(t, ee.Message, "named Unix sockets (--unix-socket) need Landlock ABI 9")
	assert.Contains(t, ee.Message, "Remedy: run with --exec-isolation bwrap")
	assert.NoFileExists(t, made, "the refused command ran")
	assert.Zero(t, accepted(named))
	assert.Zero(t, accepted(beside))
	assert.Contains(t, iso.NamedSockets, "refused")
}

// The policy report says how named sockets hold under each isolation.
func TestNamedUnixSocketsReport(t *testing.T) {
	_, pol := newFixture(t)
	sock := fixtures.ListenUnix(t, filepath.Join(fixtures.OutsideDir(t), "s.sock")).Path
	caps := subproc.Probe()
	for _, c := range []struct {
		name    string
		cfg     execsandbox.Config
		want    string
		residue bool
	}{
		// The command's own sockets leave the same residue (issue 36).
		{"none named", execsandbox.Config{}, "", !caps.ResolveUnix},
		{"bubblewrap", execsandbox.Config{UnixSocketPaths: []string{sock}}, map[bool]string{true: "kernel-enforced", false: "masked in the view"}[caps.ResolveUnix], !caps.ResolveUnix},
		{"landlock", execsandbox.Config{Isolation: execsandbox.IsolationLandlock, UnixSocketPaths: []string{sock}}, map[bool]string{true: "kernel-enforced", false: "refused"}[caps.ResolveUnix], false},
		{"allowed wholesale", execsandbox.Config{UnixSockets: true, UnixSocketPaths: []string{sock}}, map[bool]string{true: "reachable beside", false: "no narrowing"}[caps.ResolveUnix], false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := execsandbox.New(c.cfg, exec.Config{}, pol)
			require.NoError(t, err)
			iso := r.Isolation()
			if c.want == "" {
				assert.Empty(t, iso.NamedSockets)
			} else {
				assert.True(t, strings.HasPrefix(iso.NamedSockets, c.want), iso.NamedSockets)
			}
			residue := false
			for _, l := range iso.NotCovered {
				residue = residue || strings.Contains(l, "Unix sockets besides the named ones")
			}
			assert.Equal(t, c.residue, residue, iso.NotCovered)
		})
	}
}

// New refuses a named socket that is not an absolute, clean path of a
// socket that exists.
func TestNewRefusesABadNamedSocket(t *testing.T) {
	_, pol := newFixture(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	sock := fixtures.ListenUnix(t, filepath.Join(dir, "s.sock")).Path
	regular := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(regular, nil, 0o600))
	for _, c := range []struct{ path, want string }{
		{"s.sock", "is not an absolute, clean path"},
		{dir + "/x/../s.sock", "is not an absolute, clean path"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{regular, "is not a Unix socket (it is a regular file)"},
	} {
		t.Run(c.path, func(t *testing.T) {
			_, err := execsandbox.New(execsandbox.Config{UnixSocketPaths: []string{sock, c.path}}, exec.Config{}, pol)
			var ee *exec.Error
			require.True(t, errors.As(err, &ee), "%v", err)
			assert.Equal(t, exec.CodeInvalidRequest, ee.Code)
			assert.Contains(t, ee.Message, c.want)
		})
	}
}

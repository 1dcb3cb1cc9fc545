//go:build linux

package subproc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
)

// replies parses fixture.ConnectUnix's output: path to "OK pong LINE" or
// "FAIL error".
func replies(stdout string) map[string]string {
	out := map[string]string{}
	for l := range strings.SplitSeq(strings.TrimSpace(stdout), "\n") {
		if i := strings.Index(l, " "); i > 0 {
			out[l[:i]] = l[i+1:]
		}
	}
	return out
}

// socketsWorld is a named socket and a second one beside it outside every
// writable root, and a third in the writable root ws.
type socketsWorld struct {
	ws                   string
	named, beside, inner *fixture.UnixListener
}

func newSocketsWorld(t *testing.T) socketsWorld {
	t.Helper()
	out := fixture.OutsideDir(t)
	require.NoError(t, os.Chmod(out, 0o755))
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return socketsWorld{
		ws:     ws,
		named:  fixture.ListenUnix(t, filepath.Join(out, "named.sock")),
		beside: fixture.ListenUnix(t, filepath.Join(out, "beside.sock")),
		inner:  fixture.ListenUnix(t, filepath.Join(ws, "inner.sock")),
	}
}

// In bubblewrap, a command reaches the named socket and exchanges bytes
// with it; the masked sockets (one beside it, one in a writable root) refuse
// the connection and receive nothing.
func TestBwrapNamedSocketOnly(t *testing.T) {
	requireLandlock(t)
	perl := fixture.Perl(t)
	w := newSocketsWorld(t)
	out, stdout, stderr := runBwrap(t.Context(), t, subproc.Spec{
		Command: fixture.ConnectUnix(perl, "hello", w.named.Path, w.beside.Path, w.inner.Path),
		Dir:     w.ws,
		Confine: &subproc.Confinement{
			WritableRoots:   []string{w.ws},
			UnixSocketPaths: []string{w.named.Path},
			MaskedSockets:   []string{w.beside.Path, w.inner.Path},
		},
	}, 0)
	require.True(t, out.Status.Started, out.Status.Error+stderr)
	got := replies(stdout)
	assert.Equal(t, "OK pong hello", got[w.named.Path], stdout+stderr)
	assert.Equal(t, "FAIL Connection refused", got[w.beside.Path])
	assert.Equal(t, "FAIL Connection refused", got[w.inner.Path])
	n, lines := w.named.Accepted()
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"hello"}, lines)
	for _, l := range []*fixture.UnixListener{w.beside, w.inner} {
		n, lines := l.Accepted()
		assert.Zero(t, n, "%s accepted a connection", l.Path)
		assert.Empty(t, lines)
	}
	// The masks are mounts in the view: the files on disk are still the
	// sockets, and without the masks (and Landlock ABI 9, which would
	// refuse them too) the same command reaches them.
	for _, p := range []string{w.beside.Path, w.inner.Path} {
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.Equal(t, os.ModeSocket, fi.Mode().Type(), p)
	}
	if subproc.Probe().ResolveUnix {
		return
	}
	out, stdout, stderr = runBwrap(t.Context(), t, subproc.Spec{
		Command: fixture.ConnectUnix(perl, "unmasked", w.beside.Path, w.inner.Path),
		Dir:     w.ws,
		Confine: &subproc.Confinement{WritableRoots: []string{w.ws}, UnixSocketPaths: []string{w.named.Path}},
	}, 0)
	require.True(t, out.Status.Started, out.Status.Error+stderr)
	got = replies(stdout)
	assert.Equal(t, "OK pong unmasked", got[w.beside.Path], "the control: %s", stdout+stderr)
	assert.Equal(t, "OK pong unmasked", got[w.inner.Path], "the control: %s", stdout+stderr)
}

// Without a view that masks the other sockets (the Landlock isolation's
// stage), named sockets are enforced by Landlock ABI 9 or the command does
// not run.
func TestNamedSocketsWithoutTheView(t *testing.T) {
	requireLandlock(t)
	perl := fixture.Perl(t)
	w := newSocketsWorld(t)
	out, stdout, stderr := run(t.Context(), t, subproc.Spec{
		Command: fixture.ConnectUnix(perl, "hello", w.named.Path, w.beside.Path),
		Dir:     w.ws,
		Confine: &subproc.Confinement{WritableRoots: []string{w.ws}, UnixSocketPaths: []string{w.named.Path}},
	})
	if !subproc.Probe().ResolveUnix {
		assert.False(t, out.Status.Started)
		assert.Equal(t, subproc.ErrNamedSockets.Error(), out.Status.Error)
		assert.Empty(t, stdout)
		n, _ := w.named.Accepted()
		assert.Zero(t, n)
	} else {
		require.True(t, out.Status.Started, out.Status.Error)
		got := replies(stdout)
		assert.Equal(t, "OK pong hello", got[w.named.Path], stdout+stderr)
		assert.Equal(t, "FAIL Permission denied", got[w.beside.Path])
	}
	n, _ := w.beside.Accepted()
	assert.Zero(t, n)
}

// The view's socket arguments: each mask, bar those the view's own mounts
// hide, then each named socket after them.
func TestSocketArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		c    subproc.Confinement
		want []string
	}{
		{"none", subproc.Confinement{}, nil},
		{
			"masks, then the named sockets",
			subproc.Confinement{MaskedSockets: []string{"/run/a.sock", "/ws/b.sock"}, UnixSocketPaths: []string{"/run/agent/s"}},
			[]string{"--ro-bind", "/dev/null", "/run/a.sock", "--ro-bind", "/dev/null", "/ws/b.sock", "--ro-bind-try", "/run/agent/s", "/run/agent/s"},
		},
		{
			"not beneath /dev, /proc or a reserved directory",
			subproc.Confinement{
				MaskedSockets: []string{"/dev/log", "/proc/x", "/ws/.git/s", "/ws/.gitx", "/ws/.vscode"},
				Reserved:      []subproc.Reserved{{Path: "/ws/.git", Dir: true}, {Path: "/ws/.vscode"}},
			},
			[]string{"--ro-bind", "/dev/null", "/ws/.gitx", "--ro-bind", "/dev/null", "/ws/.vscode"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, subproc.SocketArgs(&c.c))
		})
	}
}

// TestBwrapRetriesWithoutAVanishedSocket: a socket listed for masking that
// is gone when bubblewrap sets the view up (its server removed it, in a
// directory the command cannot write, so no mount point can be made) does
// not keep the command from starting: it runs again without that mask, and
// the other masks still hold.
func TestBwrapRetriesWithoutAVanishedSocket(t *testing.T) {
	requireLandlock(t)
	perl := fixture.Perl(t)
	w := newSocketsWorld(t)
	gone := filepath.Join(fixture.OutsideDir(t), "gone", "vanished.sock")
	// The stream a background command's output is read from gets only the
	// command's output, never the message of the start that failed.
	stream := &seen{hit: make(chan struct{})}
	out, err := subproc.RunBwrap(t.Context(), sandbox(t), subproc.Spec{
		Command: fixture.ConnectUnix(perl, "hi", w.named.Path, w.beside.Path) + "; echo end >&2",
		Dir:     w.ws,
		Env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Confine: &subproc.Confinement{
			WritableRoots:   []string{w.ws},
			UnixSocketPaths: []string{w.named.Path},
			MaskedSockets:   []string{gone, w.beside.Path},
		},
	}, 0, 1<<20, nil, subproc.Watch{Stderr: stream})
	require.NoError(t, err)
	stdout, stderr := out.Stdout.String(), out.Stderr.String()
	require.True(t, out.Status.Started, out.Status.Error+stderr)
	stream.mu.Lock()
	assert.Equal(t, "end\n", stream.buf.String(), "the stream holds the command's stderr alone")
	stream.mu.Unlock()
	assert.Equal(t, "end\n", stderr)
	got := replies(stdout)
	assert.Equal(t, "OK pong hi", got[w.named.Path], stdout+stderr)
	assert.Equal(t, "FAIL Connection refused", got[w.beside.Path])
	n, _ := w.beside.Accepted()
	assert.Zero(t, n)
	_, err = os.Lstat(filepath.Dir(gone))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was made for the vanished socket")
}

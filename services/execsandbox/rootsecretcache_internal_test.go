//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestSecretCacheKeptCurrent (issue 34): the kept result of the walk of
// root's secrets is reused while nothing it read changed, and each change
// that makes a file or directory root's secret, or stops one being it, is in
// the next result: a mode changed, a file made, a file put in place by a
// rename, a directory's mode, a filesystem mounted over a directory (no
// inotify event: the mount table differs), another key. Each result is
// compared with a fresh walk.
func TestSecretCacheKeptCurrent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the fixture is root's directory beneath /var/lib")
	}
	base, err := os.MkdirTemp("/var/lib", "harness-cache-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	p := func(name string) string { return filepath.Join(base, name) }
	require.NoError(t, os.WriteFile(p("f"), []byte("x"), 0o644))
	require.NoError(t, os.Mkdir(p("d"), 0o755))
	require.NoError(t, os.Mkdir(p("m"), 0o755))
	require.NoError(t, os.WriteFile(p("staged"), []byte("s"), 0o600))
	require.NoError(t, os.Mkdir(p("stage"), 0o755))
	require.NoError(t, os.Rename(p("staged"), p("stage/staged")))

	// Changes that tell no watched directory (attack review): a mounted
	// root's mode, a file's through its other link, a bind-mounted file's
	// through its source; made here, before the first walk.
	elsewhere := t.TempDir()
	require.NoError(t, os.WriteFile(p("hl"), []byte("h"), 0o644))
	require.NoError(t, os.Link(p("hl"), filepath.Join(elsewhere, "hl")))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "src"), []byte("b"), 0o644))
	require.NoError(t, os.WriteFile(p("bf"), nil, 0o644))
	require.NoError(t, os.Mkdir(p("mr"), 0o755))
	mounted := unix.Mount("tmpfs", p("mr"), "tmpfs", 0, "mode=0755") == nil
	if mounted {
		t.Cleanup(func() { _ = unix.Unmount(p("mr"), unix.MNT_DETACH) })
		require.NoError(t, unix.Mount(filepath.Join(elsewhere, "src"), p("bf"), "", unix.MS_BIND, ""))
		t.Cleanup(func() { _ = unix.Unmount(p("bf"), unix.MNT_DETACH) })
	}

	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: t.TempDir()}
	var c secretCache
	t.Cleanup(c.dropLocked) // its inotify instance closed
	mine := func(ms []subproc.Masked) []subproc.Masked {
		var out []subproc.Masked
		for _, m := range ms {
			if m.Path == base || filepath.Dir(m.Path) == base {
				out = append(out, m)
			}
		}
		return out
	}
	get := func(t *testing.T) []subproc.Masked {
		t.Helper()
		got, err := c.get(t.Context(), policy, "/root", []uint32{0}, false)
		require.NoError(t, err)
		fresh, _, err := rootSecrets(t.Context(), policy, "/root", []uint32{0}, nil)
		require.NoError(t, err)
		require.Equal(t, mine(fresh), mine(got), "the kept result is a fresh walk's")
		return mine(got)
	}
	// Nothing changed: the result is reused, not walked again; and a
	// session's own temp area, a root outside every system directory,
	// changes nothing the walk decides (the warm-up's result serves every
	// session's first command). Another process may change a watched
	// system directory meanwhile (a test making its fixtures in /var/tmp),
	// and the walk is then rightly made again: the reuse is checked in a
	// quiet moment, tried up to 10 times.
	session := policy
	session.TempRoots = []string{t.TempDir()}
	for try := 1; ; try++ {
		require.Empty(t, get(t))
		kept := c.set
		require.NotNil(t, kept, "this host's system directories are watched")
		require.Empty(t, get(t))
		again := c.set
		_, err = c.get(t.Context(), session, "/root", []uint32{0}, false)
		require.NoError(t, err)
		if kept == again && again == c.set {
			break
		}
		require.Less(t, try, 10, "walked again at each try: nothing changed (%v), or a root outside the system directories (%v)", kept == again, again == c.set)
		t.Logf("try %d: a watched directory changed meanwhile", try)
	}

	steps := []struct {
		name   string
		change func(t *testing.T)
		want   []subproc.Masked
	}{
		{
			"a file made root's", func(t *testing.T) { require.NoError(t, os.Chmod(p("f"), 0o600)) },
			[]subproc.Masked{{Path: p("f")}},
		},
		{"a file others may read again", func(t *testing.T) { require.NoError(t, os.Chmod(p("f"), 0o644)) }, nil},
		{
			"a secret file made", func(t *testing.T) { require.NoError(t, os.WriteFile(p("new"), nil, 0o600)) },
			[]subproc.Masked{{Path: p("new")}},
		},
		{
			"a secret file renamed in", func(t *testing.T) { require.NoError(t, os.Rename(p("stage/staged"), p("moved"))) },
			[]subproc.Masked{{Path: p("moved")}, {Path: p("new")}},
		},
		{
			"a directory made root's", func(t *testing.T) { require.NoError(t, os.Chmod(p("d"), 0o700)) },
			[]subproc.Masked{{Path: p("d"), Dir: true}, {Path: p("moved")}, {Path: p("new")}},
		},
		{"a root-only filesystem mounted over a directory", func(t *testing.T) {
			if err := unix.Mount("tmpfs", p("m"), "tmpfs", 0, "mode=0700"); err != nil {
				t.Skipf("cannot mount here: %v", err)
			}
			t.Cleanup(func() { _ = unix.Unmount(p("m"), unix.MNT_DETACH) })
		}, []subproc.Masked{{Path: p("d"), Dir: true}, {Path: p("m"), Dir: true}, {Path: p("moved")}, {Path: p("new")}}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.change(t)
			require.Equal(t, s.want, get(t))
		})
	}
	hidden := []struct {
		name   string
		change func(t *testing.T)
		masked subproc.Masked
		mount  bool
	}{
		{"a file made root's through its other link", func(t *testing.T) {
			require.NoError(t, os.Chmod(filepath.Join(elsewhere, "hl"), 0o600))
		}, subproc.Masked{Path: p("hl")}, false},
		{"a mounted filesystem's root made root's", func(t *testing.T) {
			require.NoError(t, os.Chmod(p("mr"), 0o700))
		}, subproc.Masked{Path: p("mr"), Dir: true}, true},
		{"a bind-mounted file made root's through its source", func(t *testing.T) {
			require.NoError(t, os.Chmod(filepath.Join(elsewhere, "src"), 0o600))
		}, subproc.Masked{Path: p("bf")}, true},
	}
	hidden = append(hidden, struct {
		name   string
		change func(t *testing.T)
		masked subproc.Masked
		mount  bool
	}{"a missing system directory made", func(t *testing.T) {
		require.NoError(t, os.Mkdir(filepath.Join(elsewhere, "top"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "top/secret"), nil, 0o600))
	}, subproc.Masked{Path: filepath.Join(elsewhere, "top/secret")}, false})
	// A system directory that does not exist yet (as /srv or /opt on many
	// hosts), in a directory no walk reads (as /).
	systemDirs = append(slices.Clone(systemDirs), filepath.Join(elsewhere, "top"))
	t.Cleanup(func() { systemDirs = systemDirs[:len(systemDirs)-1] })
	for _, h := range hidden {
		t.Run(h.name, func(t *testing.T) {
			if h.mount && !mounted {
				t.Skip("cannot mount here")
			}
			all := func() []subproc.Masked {
				get(t) // the kept result is a fresh walk's, for this fixture
				got, err := c.get(t.Context(), policy, "/root", []uint32{0}, false)
				require.NoError(t, err)
				return got
			}
			require.NotContains(t, all(), h.masked)
			h.change(t)
			require.Contains(t, all(), h.masked)
		})
	}

	t.Run("another key", func(t *testing.T) {
		other := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: base}
		got, err := c.get(t.Context(), other, "/root", []uint32{0}, false)
		require.NoError(t, err)
		assert.Empty(t, mine(got), "nothing in a writable root is masked")
	})
}

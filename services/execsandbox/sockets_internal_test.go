//go:build linux

package execsandbox

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestBoundPaths(t *testing.T) {
	const header = "Num       RefCount Protocol Flags    Type St Inode Path\n"
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"header only", header, nil},
		{
			"pathname, abstract, unnamed and relative sockets", header +
				"0000000000000000: 00000002 00000000 00010000 0001 01 12414894 /var/tmp/a.sock\n" +
				"0000000000000000: 00000002 00000000 00010000 0001 01 12414895 @/tmp/.X11-unix/X0\n" +
				"0000000000000000: 00000003 00000000 00000000 0001 03    4321\n" +
				"0000000000000000: 00000002 00000000 00010000 0001 01    77 rel.sock\n",
			[]string{"/var/tmp/a.sock"},
		},
		{
			"a path with spaces, after a padded inode", header +
				"0000000000000000: 00000002 00000000 00010000 0001 01    17 /run/my agent/s ock\n",
			[]string{"/run/my agent/s ock"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := boundPaths(strings.NewReader(c.in))
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	for _, bad := range []string{"", "sl  local_address rem_address\n"} {
		_, err := boundPaths(strings.NewReader(bad))
		assert.Error(t, err, "%q", bad)
	}
}

// The sockets to mask are those bound here that are sockets now, once
// each, canonical, and not the named ones (by identity, whatever path
// names them).
func TestMaskedSockets(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	listen := func(name string) string {
		p := filepath.Join(dir, name)
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return p
	}
	require.NoError(t, os.Symlink(dir, filepath.Join(dir, "via")))
	named, other := listen("named.sock"), listen("other.sock")
	through := listen("via/through.sock") // listed by the path it was bound at
	gone := listen("gone.sock")
	require.NoError(t, os.Remove(gone)) // still bound, no longer a file
	pinned, err := pinSockets([]string{filepath.Join(dir, "via", "named.sock")})
	require.NoError(t, err)
	got, sources, ids := namedSockets(append(pinned, pinnedSocket{path: filepath.Join(dir, "missing.sock"), uid: pinned[0].uid}))
	assert.Equal(t, []string{named}, got)
	assert.Empty(t, sources)
	masked, err := maskedSockets(ids)
	require.NoError(t, err)
	assert.Contains(t, masked, other)
	assert.Contains(t, masked, filepath.Join(dir, "through.sock"), "masked at its canonical path")
	assert.NotContains(t, masked, through)
	assert.NotContains(t, masked, named)
	assert.NotContains(t, masked, gone)
	seen := map[string]bool{}
	for _, p := range masked {
		assert.False(t, seen[p], "%s twice", p)
		seen[p] = true
		assert.True(t, filepath.IsAbs(p) && filepath.Clean(p) == p, p)
	}
}

// A socket is masked for a user only where that user could reach it by the
// modes: every directory above it searchable, the socket writable.
func TestPermits(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	me, myGID := uint32(os.Geteuid()), uint32(os.Getegid())
	const stranger, strangerGID = 54321, 54321
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	private, traversable, group := mk("private", 0o700), mk("traversable", 0o711), mk("group", 0o750)
	for _, d := range []string{base, filepath.Dir(base)} {
		require.NoError(t, os.Chmod(d, 0o755)) // t.TempDir makes them 0700
	}
	for _, c := range []struct {
		name string
		dir  string
		uid  uint32
		gids []uint32
		want bool
	}{
		{"the owner searches its 0700 directory", private, me, []uint32{myGID}, true},
		{"a stranger does not", private, stranger, []uint32{strangerGID}, false},
		{"a stranger searches a 0711 directory", traversable, stranger, []uint32{strangerGID}, true},
		{"a member of the group searches a 0750 directory", group, stranger, []uint32{strangerGID, myGID}, true},
		{"a stranger outside the group does not", group, stranger, []uint32{strangerGID}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.want == false && me == stranger {
				t.Skip("the test's user is the stranger")
			}
			assert.Equal(t, c.want, searchable(c.dir, c.uid, c.gids))
			p := filepath.Join(c.dir, "s.sock")
			want := []string(nil)
			if c.want {
				want = []string{p}
			}
			assert.Equal(t, want, searchableBy([]string{p}, c.uid, c.gids))
		})
	}
	l, err := net.Listen("unix", filepath.Join(base, "s.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	sock := filepath.Join(base, "s.sock")
	for _, c := range []struct {
		mode     os.FileMode
		uid      uint32
		gids     []uint32
		writable bool
	}{
		{0o755, me, []uint32{myGID}, true},
		{0o755, stranger, []uint32{strangerGID}, false},
		{0o775, stranger, []uint32{myGID}, true},
		{0o777, stranger, []uint32{strangerGID}, true},
		// Its owner may chmod it: writable to it whatever the mode (a
		// command that shut its own socket before one start opens it at
		// the next, TestSocketBehindAShutDirectory).
		{0o500, me, []uint32{myGID}, true},
		{0o000, me, []uint32{myGID}, true},
		{0o500, stranger, []uint32{strangerGID}, false},
	} {
		require.NoError(t, os.Chmod(sock, c.mode))
		assert.Equal(t, c.writable, permits(sock, c.uid, c.gids, 0o2), "mode %o, uid %d", c.mode, c.uid)
	}
	assert.False(t, permits(filepath.Join(base, "missing"), me, []uint32{myGID}, 0o1))
}

// A socket bound by a thread that entered a network namespace of its own
// is not in the server's /proc/net/unix, and is found all the same
// (issue 35): the listing of every task's namespace is read. Making the
// namespace from a thread needs CAP_SYS_ADMIN; the ordinary user's case,
// a process in another namespace, is TestUnixSocketsOfOtherNetworkNamespaces.
func TestBoundEverywhereReadsEveryTasksNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a thread can enter a new network namespace only with CAP_SYS_ADMIN")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	path := filepath.Join(dir, "thread.sock")
	bound := make(chan error)
	release := make(chan struct{})
	go func() {
		// The thread goes back to its namespace before the runtime may
		// have it again; one that cannot stays locked and ends with the
		// goroutine. (On the main thread, which never ends, a namespace
		// left behind would be every later test's /proc/self/ns/net.)
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			bound <- err
			return
		}
		defer func() {
			if unix.Setns(own, unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}
			_ = unix.Close(own)
		}()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			bound <- err
			return
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			defer func() { _ = unix.Close(fd) }()
			err = errors.Join(unix.Bind(fd, &unix.SockaddrUnix{Name: path}), unix.Listen(fd, 1))
		}
		bound <- err
		<-release
	}()
	require.NoError(t, <-bound)
	defer close(release)
	here, err := os.ReadFile("/proc/thread-self/net/unix")
	require.NoError(t, err)
	require.NotContains(t, string(here), path, "bound in the server's own namespace")
	listings, err := boundEverywhere(procRoot)
	require.NoError(t, err)
	var all []string
	for _, l := range listings {
		all = append(all, l.paths...)
	}
	assert.Contains(t, all, path)
	masked, err := maskedSockets(nil)
	require.NoError(t, err)
	assert.Contains(t, masked, path)
}

// BenchmarkMaskedSockets measures the listing of every namespace's bound
// sockets and their reading through the mount tables of the tasks of the
// other namespaces, which each command with named sockets below Landlock
// ABI 9 does.
func BenchmarkMaskedSockets(b *testing.B) {
	for b.Loop() {
		if _, err := maskedSockets(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// translate maps a path of another mount namespace to the paths here that
// name the same file: through a bind of a directory (a container's
// volume), the deepest and last-mounted mount holding it, every mount here
// of that filesystem whose root holds it; none for a filesystem not
// mounted here.
func TestTranslate(t *testing.T) {
	// Mount tables in the kernel's format (proc(5)): ID, parent,
	// major:minor, root, mount point, options, "-", type, source, options.
	ours := mounts(t, ""+
		"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"+
		"2 1 8:1 /srv /mnt/srv rw - ext4 /dev/sda1 rw\n"+
		"3 1 0:40 / /tmp rw - tmpfs tmpfs rw\n")
	theirs := mounts(t, ""+
		"10 0 0:99 / / rw - overlay overlay rw\n"+
		"11 10 8:1 /srv/app /data rw - ext4 /dev/sda1 rw\n"+
		"12 10 0:41 / /run rw - tmpfs tmpfs rw\n"+
		"13 11 8:1 /var/tmp/x /data/in rw - ext4 /dev/sda1 rw\n"+
		"14 11 8:1 /var/tmp/y /data/in rw - ext4 /dev/sda1 rw\n"+
		"15 10 8:1 /home/u/my\\040dir /sp rw - ext4 /dev/sda1 rw\n")
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/data/app.sock", []string{"/srv/app/app.sock", "/mnt/srv/app/app.sock"}},
		{"/data/in/s.sock", []string{"/var/tmp/y/s.sock"}},
		{"/sp/s.sock", []string{"/home/u/my dir/s.sock"}},
		{"/run/app.sock", nil},
		{"/etc/app.sock", nil},
	} {
		assert.Equal(t, c.want, translate(c.path, theirs, ours), c.path)
	}
}

func mounts(t *testing.T, table string) []*mountinfo.Info {
	t.Helper()
	m, err := mountinfo.GetMountsFromReader(strings.NewReader(table), nil)
	require.NoError(t, err)
	return m
}

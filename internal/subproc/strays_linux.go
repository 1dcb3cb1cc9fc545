package subproc

import (
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// mountPoint is a path bubblewrap mounts a mask over (a file of
// /dev/null or of a sealed memory file, an empty tmpfs), with what was there
// on the host just before bubblewrap started.
type mountPoint struct {
	path   string
	dir    bool
	before unix.Stat_t
	found  bool // before holds what was there; false: nothing was
	// parent is an O_PATH descriptor of its directory, opened at the
	// record without following any symlink: what is removed is in that
	// directory, whatever a concurrent command renames or swaps for a
	// symlink on the way to it meanwhile.
	parent int
}

// strayMountPoints removes, on the host, the mount points bubblewrap made
// for a command's view where the path it masks was gone by the time it
// mounted (a socket its server removed, a deny-read file or directory
// removed on the host): bubblewrap makes a missing mount point (an empty
// file of mode 0444, an empty directory), and in a writable part of the
// view that is the host's own directory, so without this the command would
// leave an empty file or directory behind in the user's tree, which also
// keeps a program removing that tree from removing it (rmdir fails with
// ENOTEMPTY: issue 34, a command leaves no trace and never races the host).
//
// Only an entry made after record, of the kind bubblewrap makes (an empty
// regular file without a write bit, or an empty directory, owned by the
// user bubblewrap ran as, changed no earlier than a moment before record),
// is removed; anything else at the path is left alone. Removing it on the
// host takes the mask off it in the command's view (the kernel detaches a
// mount from a dentry removed in another mount namespace): the command sees
// nothing there, as the host does.
type strayMountPoints struct {
	mu      sync.Mutex
	points  []mountPoint
	uid     uint32
	since   int64 // unix nanoseconds: entries changed earlier are not ours
	cleared bool
}

// recordMountPoints records what is at each mount point of c's masks
// (maskMountPoints) now, before bubblewrap starts; uid is the user it runs
// as.
func recordMountPoints(c *Confinement, uid uint32) *strayMountPoints {
	s := &strayMountPoints{uid: uid, since: time.Now().Add(-2 * time.Second).UnixNano()}
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for _, m := range maskMountPoints(c) {
		fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(m.path), how)
		if err != nil {
			continue // nothing bubblewrap can make a mount point in either
		}
		m.parent = fd
		m.found = unix.Fstatat(fd, filepath.Base(m.path), &m.before, unix.AT_SYMLINK_NOFOLLOW) == nil
		s.points = append(s.points, m)
	}
	return s
}

// maskMountPoints returns the paths bubblewrap mounts a mask over from
// another source for c where it can make a missing one on the host: the
// deny-read masks, the sockets masked with a mount of their own, and the
// named sockets bound from another file, beneath a writable root (or
// anywhere under FullAccess, whose `/` is the host's, writable). Elsewhere
// the view is read-only and bubblewrap makes nothing.
func maskMountPoints(c *Confinement) []mountPoint {
	var out []mountPoint
	add := func(p string, dir bool) {
		if c.FullAccess || slices.ContainsFunc(c.WritableRoots, func(r string) bool { return dirfd.Beneath(r, p) }) {
			out = append(out, mountPoint{path: p, dir: dir})
		}
	}
	for _, m := range c.Masked {
		add(m.Path, m.Dir)
	}
	for _, p := range boundSocketMasks(c) {
		add(p, false)
	}
	for _, p := range c.UnixSocketPaths {
		if src := c.SocketSources[p]; src != "" && src != p {
			add(p, false)
		}
	}
	return out
}

// clear removes the mount points bubblewrap made (see strayMountPoints)
// once bubblewrap has made the view, or has given up making it. It is
// safe to call more than once and from more than one goroutine; only the
// first call does anything.
func (s *strayMountPoints) clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cleared {
		return
	}
	s.cleared = true
	for _, m := range s.points {
		s.removeMade(m)
		_ = unix.Close(m.parent)
	}
}

func (s *strayMountPoints) removeMade(m mountPoint) {
	parent, name := m.parent, filepath.Base(m.path)
	var first unix.Stat_t
	if unix.Fstatat(parent, name, &first, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		first.Mode&unix.S_IFMT != unix.S_IFREG && first.Mode&unix.S_IFMT != unix.S_IFDIR {
		return // only files and directories are opened, never a device
	}
	// Opened (never a symlink; without blocking) to ask it for the
	// placeholders' mark below.
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Dev != first.Dev || st.Ino != first.Ino {
		return
	}
	if m.found && st.Dev == m.before.Dev && st.Ino == m.before.Ino && st.Mode == m.before.Mode && st.Ctim == m.before.Ctim {
		// What was there: the mask went over it. (The inode number alone
		// does not tell: the file system may give the one of a file
		// removed to the next file made.)
		return
	}
	if st.Uid != s.uid || st.Ctim.Nano() < s.since {
		return
	}
	if marked(fd) {
		// A reservation's placeholder (or, where the file system keeps
		// no extended attributes, what could be one): never removed.
		return
	}
	switch {
	case m.dir && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		// rmdir removes only an empty directory.
		_ = unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
	case !m.dir && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 && st.Nlink == 1 && st.Mode&0o222 == 0:
		_ = unix.Unlinkat(parent, name, 0)
	}
}

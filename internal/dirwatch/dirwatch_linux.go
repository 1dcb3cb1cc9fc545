package dirwatch

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// mask is what a watched directory or file reports (see the package doc).
// A file's content written (IN_MODIFY) is not among them.
const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// maxBudget bounds Budget.
const maxBudget = 100_000

// localMagics are the filesystems whose every change inotify sees: changes
// on a network or FUSE filesystem can come from another machine or process
// without an event.
var localMagics = map[int64]bool{
	unix.EXT4_SUPER_MAGIC: true, unix.XFS_SUPER_MAGIC: true, unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC: true, unix.F2FS_SUPER_MAGIC: true, 0x2fc12fc1: true, // ZFS
}

// Local reports whether every change of a filesystem of this type (statfs's
// f_type) is seen by inotify.
func Local(fsType int64) bool { return localMagics[fsType] }

// Budget is how many directories and files one user of inotify in the
// process may watch: a quarter of the user's inotify watches (an editor or another tool
// of the same user needs its share; /proc/sys/fs/inotify/max_user_watches,
// 8192 when unreadable), at most 100,000.
func Budget() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 8192 / 4
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 8192 / 4
	}
	return min(maxBudget, n/4)
}

// Set is the directories and files watched through one inotify instance of
// its own.
// It is not safe for concurrent use.
type Set struct {
	fd      int
	limit   int
	watched int
	changed bool
	buf     []byte
}

// New returns an empty Set that watches at most limit directories and files.
// Errors: inotify_init1's (EMFILE when the user's instances are spent).
func New(limit int) (*Set, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	return &Set{fd: fd, limit: limit, buf: make([]byte, 4096)}, nil
}

// Add watches the directory or file at path (a symlink itself, not
// followed; what another filesystem is mounted on, its mounted root) and
// reports whether it is watched: false when path is on no Local filesystem,
// the Set holds its limit, or the kernel refused the watch. The watch is on
// what path names when Add runs: a caller that reads or judges it after Add
// sees every later change reported, and one renamed or replaced after Add
// reports its move.
func (s *Set) Add(path string) bool {
	if s.watched >= s.limit {
		return false
	}
	var fs unix.Statfs_t
	if unix.Statfs(path, &fs) != nil || !Local(int64(fs.Type)) { //nolint:unconvert // Type's width varies by platform
		return false
	}
	if _, err := unix.InotifyAddWatch(s.fd, path, mask); err != nil {
		return false
	}
	s.watched++
	return true
}

// Changed reports whether a watched directory or file changed since it was
// added
// (or the kernel's queue overflowed). Once true it stays true.
func (s *Set) Changed() bool {
	for !s.changed {
		n, err := unix.Read(s.fd, s.buf)
		if err == unix.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			// EAGAIN: nothing queued. Any other error: nothing can be
			// trusted.
			s.changed = err != unix.EAGAIN
			break
		}
		// Any event is a change; IN_IGNORED follows a removal already
		// reported, and IN_Q_OVERFLOW says some were lost.
		s.changed = true
	}
	return s.changed
}

// MountTable is the process's mount table (/proc/self/mountinfo), nil when
// it cannot be read: a result kept while nothing watched changed is reused
// only under the table it was computed with, since a filesystem mounted or
// unmounted raises no inotify event. The table is read again only when the
// kernel says it changed (poll on the open mountinfo reports POLLPRI after
// each change of the mount namespace, as libmount's monitor relies on), so
// a call costs one poll while nothing is mounted; the slice is shared and
// must not be modified.
func MountTable() []byte {
	mountTable.Lock()
	defer mountTable.Unlock()
	if mountTable.fd == 0 {
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		mountTable.fd = fd + 1
	}
	fd := mountTable.fd - 1
	if mountTable.table != nil {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		if _, err := unix.Poll(pfd, 0); err == nil && pfd[0].Revents&(unix.POLLPRI|unix.POLLERR|unix.POLLNVAL) == 0 {
			return mountTable.table
		}
	}
	table, err := readFrom(fd)
	if err != nil {
		mountTable.table = nil
		return nil
	}
	mountTable.table = table
	return table
}

// mountTable is MountTable's open /proc/self/mountinfo (fd+1; 0 until it
// is opened) and its table last read. A raw descriptor, not an *os.File:
// the runtime's poller would register the file (mountinfo is pollable) and
// its own poll would take the change notice MountTable waits for.
var mountTable struct {
	sync.Mutex
	fd    int
	table []byte
}

// readFrom reads the file fd from its start to its end.
func readFrom(fd int) ([]byte, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	var out []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// Close releases the inotify instance.
func (s *Set) Close() error { return unix.Close(s.fd) }

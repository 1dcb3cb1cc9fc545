package protectscan

import "golang.org/x/sys/unix"

// The inotify calls and flags the kept-current scans are made of;
// inotify_other.go stands in elsewhere, where inotifyInit refuses and
// every scan walks.

const (
	inAttrib     = unix.IN_ATTRIB
	inCreate     = unix.IN_CREATE
	inDelete     = unix.IN_DELETE
	inDeleteSelf = unix.IN_DELETE_SELF
	inDontFollow = unix.IN_DONT_FOLLOW
	inExclUnlink = unix.IN_EXCL_UNLINK
	inIgnored    = unix.IN_IGNORED
	inModify     = unix.IN_MODIFY
	inMovedFrom  = unix.IN_MOVED_FROM
	inMovedTo    = unix.IN_MOVED_TO
	inMoveSelf   = unix.IN_MOVE_SELF
	inOnlydir    = unix.IN_ONLYDIR
	inQOverflow  = unix.IN_Q_OVERFLOW
	inUnmount    = unix.IN_UNMOUNT
)

const sizeofInotifyEvent = unix.SizeofInotifyEvent

type inotifyEvent = unix.InotifyEvent

func inotifyInit() (int, error) { return unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC) }

func inotifyAddWatch(fd int, path string, mask uint32) (int, error) {
	return unix.InotifyAddWatch(fd, path, mask)
}

// queuedBytes is how many bytes of events fd holds (FIONREAD).
func queuedBytes(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCINQ) }

package fsuser

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// save records the thread's filesystem identity.
func (id *identity) save() error {
	id.uid, id.gid = fsid(unix.SYS_SETFSUID), fsid(unix.SYS_SETFSGID)
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, maxGroups, uintptr(unsafe.Pointer(&id.groups[0])), 0)
	if e != 0 {
		return fmt.Errorf("fsuser: getgroups: %w", e)
	}
	id.n = int(n)
	return nil
}

// set gives the thread the filesystem uid and gid, and with setGroups the
// supplementary groups, and checks each took: setfsuid and setfsgid report
// no error, only the previous id, so each is read back.
func set(uid, gid int, groups []uint32, setGroups bool) error {
	var list *uint32
	if len(groups) > 0 {
		list = &groups[0]
	}
	if setGroups {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(list)), 0); e != 0 {
			return fmt.Errorf("fsuser: setgroups: %w", e)
		}
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0) //nolint:errcheck // checked by reading it back
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0) //nolint:errcheck // checked by reading it back
	if got := fsid(unix.SYS_SETFSGID); got != gid {
		return fmt.Errorf("fsuser: setfsgid(%d) left the filesystem gid %d: %w", gid, got, unix.EPERM)
	}
	if got := fsid(unix.SYS_SETFSUID); got != uid {
		return fmt.Errorf("fsuser: setfsuid(%d) left the filesystem uid %d: %w", uid, got, unix.EPERM)
	}
	return nil
}

// fsid returns the thread's current filesystem uid (SYS_SETFSUID) or gid
// (SYS_SETFSGID), without changing it: an id of -1 is invalid, so the call
// only reports the current one.
func fsid(trap uintptr) int {
	r, _, _ := unix.RawSyscall(trap, ^uintptr(0), 0, 0)
	return int(uint32(r))
}

package audit

import "golang.org/x/sys/unix"

// datasync makes fd's data durable: F_FULLFSYNC, since fsync on macOS
// leaves the data in the drive's cache.
func datasync(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	return err
}

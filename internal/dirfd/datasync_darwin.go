package dirfd

import "golang.org/x/sys/unix"

// Datasync makes the data written to fd durable: F_FULLFSYNC, since
// fsync on macOS leaves the data in the drive's cache. Errors: fcntl's.
func Datasync(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	return err
}

package dirfd

import "golang.org/x/sys/unix"

// Datasync makes the data written to fd durable, and its size
// (fdatasync(2); not the times). Errors: the system call's.
func Datasync(fd int) error { return unix.Fdatasync(fd) }

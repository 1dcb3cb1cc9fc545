package audit

import "golang.org/x/sys/unix"

// datasync makes fd's data durable (fdatasync: the size too, not the
// times).
func datasync(fd int) error { return unix.Fdatasync(fd) }

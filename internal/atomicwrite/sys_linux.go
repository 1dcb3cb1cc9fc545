package atomicwrite

import "golang.org/x/sys/unix"

// The Linux flags and system call the writes are made of; sys_other.go
// stands in elsewhere, where dirfd refuses every open first.

const (
	oTmpfile        = unix.O_TMPFILE
	renameExchange  = unix.RENAME_EXCHANGE
	renameNoReplace = unix.RENAME_NOREPLACE
)

func renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	return unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
}

package dirfd

import (
	"os"

	"golang.org/x/sys/unix"
)

// The Linux system calls and flags the fence is made of; sys_other.go
// refuses them elsewhere.

type openHow = unix.OpenHow

const (
	resolveBeneath      = unix.RESOLVE_BENEATH
	resolveNoSymlinks   = unix.RESOLVE_NO_SYMLINKS
	resolveNoMagiclinks = unix.RESOLVE_NO_MAGICLINKS
	renameNoReplace     = unix.RENAME_NOREPLACE
)

func sysOpenat2(dirfd int, name string, how *openHow) (int, error) {
	return unix.Openat2(dirfd, name, how)
}

func renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	return unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
}

func getdents(fd int, buf []byte) (int, error) { return unix.Getdents(fd, buf) }

// OPath opens a file for its descriptor alone (O_PATH: no permission on it
// needed, no I/O, never blocking on a FIFO); 0 where there is none.
const OPath = unix.O_PATH

// ReadOnlyMount reports whether path (followed) lies on a file system
// mounted read-only (statfs ST_RDONLY). Errors: statfs's.
func ReadOnlyMount(path string) (bool, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false, err
	}
	return fs.Flags&unix.ST_RDONLY != 0, nil
}

// RenameNoReplace renames oldpath to newpath, failing with EEXIST
// (fs.ErrExist) when newpath exists (renameat2 RENAME_NOREPLACE).
func RenameNoReplace(oldpath, newpath string) error {
	if err := renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, renameNoReplace); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

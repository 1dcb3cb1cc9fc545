package dirfd

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenReadFDNoSymlinks is OpenRead with every component of rel resolved
// without following a symlink (openat2 RESOLVE_NO_SYMLINKS: one there
// fails with ELOOP), returning the bare descriptor, which the caller closes
// with unix.Close. What it opens is the entry rel names beneath d, real
// directories all the way, so the descriptor's path is d's path joined
// with rel unless a directory on the way is renamed meanwhile. It spares the
// two system calls os.NewFile adds to every open (the non-blocking check and
// a poller registration that regular files refuse), which count when a
// search opens tens of thousands of files. Errors are *os.PathError.
func (d *Dir) OpenReadFDNoSymlinks(rel string) (int, unix.Stat_t, error) {
	return openReadFD(d.fd, d.name(rel), d.resolve|resolveNoSymlinks, d.full(rel))
}

func openReadFD(dirfd int, name string, resolve uint64, display string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openat2(dirfd, name, &openHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: resolve,
	})
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: display, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, st, &os.PathError{Op: "fstat", Path: display, Err: err}
	}
	return fd, st, nil
}

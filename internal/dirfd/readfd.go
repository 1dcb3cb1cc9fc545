package dirfd

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenReadFD is OpenRead returning the bare descriptor, which the caller
// closes with unix.Close. It spares the two system calls os.NewFile adds to
// every open (the non-blocking check and a poller registration that regular
// files refuse), which count when a search opens tens of thousands of files.
// Errors are *os.PathError.
func (d *Dir) OpenReadFD(rel string) (int, unix.Stat_t, error) {
	return openReadFD(d.fd, d.name(rel), d.resolve, d.full(rel))
}

func openReadFD(dirfd int, name string, resolve uint64, display string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openat2(dirfd, name, &unix.OpenHow{
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

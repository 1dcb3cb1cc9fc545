package dirfd

import (
	"golang.org/x/sys/unix"
)

// OpenRead opens rel beneath d for reading without blocking and returns the
// file with the fstat of the opened descriptor. It never hangs on a FIFO or a
// device: the open is non-blocking and the caller decides from the returned
// Stat_t (IsRegular) whether to read. Errors are *os.PathError.
func (d *Dir) OpenRead(rel string) (*File, unix.Stat_t, error) {
	return openRead(d.fd, d.name(rel), d.resolve, d.full(rel))
}

func openRead(dirfd int, name string, resolve uint64, display string) (*File, unix.Stat_t, error) {
	fd, st, err := openReadFD(dirfd, name, resolve, display)
	if err != nil {
		return nil, st, err
	}
	return newFile(fd, display), st, nil
}

// IsRegular reports whether st describes a regular file.
func IsRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }

// IsDir reports whether st describes a directory.
func IsDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// IsSymlink reports whether st describes a symbolic link.
func IsSymlink(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }

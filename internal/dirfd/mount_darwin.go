package dirfd

import "golang.org/x/sys/unix"

// ReadOnlyMount reports whether path (followed) lies on a file system
// mounted read-only (statfs MNT_RDONLY). Errors: statfs's.
func ReadOnlyMount(path string) (bool, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false, err
	}
	return fs.Flags&unix.MNT_RDONLY != 0, nil
}

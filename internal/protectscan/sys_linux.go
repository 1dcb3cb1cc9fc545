package protectscan

import "golang.org/x/sys/unix"

// The Linux flags and system calls the walks are made of; sys_other.go
// refuses them elsewhere.

const oPath = unix.O_PATH

// openNoSymlinks opens path with flags, refusing a symlink in any of its
// components (openat2 RESOLVE_NO_SYMLINKS).
func openNoSymlinks(path string, flags uint64) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
}

func sysGetdents(fd int, buf []byte) (int, error) { return unix.Getdents(fd, buf) }

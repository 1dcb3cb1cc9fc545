package protectscan

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The Linux flags and system calls the walks are made of; sys_other.go
// refuses them elsewhere.

func sysGetdents(fd int, buf []byte) (int, error) { return unix.Getdents(fd, buf) }

// ResolveLink returns the path p resolves to, following symlinks as the
// kernel does (at most 40; never a magic link of /proc), in one walk, with
// the stat of what is there; ok is false when it does not resolve (missing,
// a loop, too many links). A chain of links costs one open, not a stat of
// every prefix at every hop as filepath.EvalSymlinks does (the attack
// review: 116 links to a chain of 250 made a command wait 25 s).
func ResolveLink(p string, st *unix.Stat_t) (string, bool) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return "", false
	}
	defer unix.Close(fd) //nolint:errcheck // a path descriptor
	if unix.Fstat(fd, st) != nil {
		return "", false
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil || n == 0 || buf[0] != '/' || strings.HasSuffix(string(buf[:n]), " (deleted)") {
		return "", false
	}
	return string(buf[:n]), true
}

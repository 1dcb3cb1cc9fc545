package realpath

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// deletedSuffix is what the kernel appends to the path of an unlinked file.
const deletedSuffix = " (deleted)"

// errMoved says the opened file is no longer at the path the kernel gave
// for it, or no longer at the path asked for: it was renamed over, renamed
// away or unlinked between the open and the readlink (the kernel then
// appends " (deleted)"), so the answer must not be used.
var errMoved = errors.New("the file moved while it was resolved")

func once(abs string) (string, error) {
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd) //nolint:errcheck // closing an O_PATH descriptor cannot lose data
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil {
		return filepath.EvalSymlinks(abs)
	}
	resolved := string(buf[:n])
	if resolved == abs && !strings.HasSuffix(abs, deletedSuffix) {
		// The kernel names the opened file by the very path that opened
		// it: no component was a link and the file was not renamed before
		// the readlink (a renamed or unlinked file reads back another
		// path, or this one with " (deleted)"), so the check below has
		// nothing to catch. A name that itself ends in " (deleted)" could
		// be the kernel's answer for another, unlinked file: it takes the
		// check.
		return resolved, nil
	}
	if !filepath.IsAbs(resolved) {
		// A descriptor with no path in the tree (an anonymous pipe or
		// socket reached through /proc/self/fd reads back "pipe:[N]"):
		// it names no file, so there is nothing to resolve to.
		return "", unix.ENOENT
	}
	// The answer is only good if it still names the file we opened, and
	// abs still names it too: a file renamed away between the open and the
	// readlink reads back under its new name, which is not abs's.
	var opened, named, asked unix.Stat_t
	if unix.Fstat(fd, &opened) != nil || unix.Lstat(resolved, &named) != nil || unix.Stat(abs, &asked) != nil ||
		opened.Dev != named.Dev || opened.Ino != named.Ino || opened.Dev != asked.Dev || opened.Ino != asked.Ino {
		return "", errMoved
	}
	return resolved, nil
}

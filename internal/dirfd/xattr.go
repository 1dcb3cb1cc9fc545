package dirfd

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// Xattrs returns the extended attributes of the open descriptor fd (name ->
// value), nil when it has none or they cannot be read (a filesystem
// without them): a record of them, not a check.
func Xattrs(fd int) map[string][]byte {
	return readXattrs(
		func(b []byte) (int, error) { return unix.Flistxattr(fd, b) },
		func(name string, b []byte) (int, error) { return unix.Fgetxattr(fd, name, b) })
}

// XattrsAt is Xattrs of the entry name in the directory dirFD, not
// following a final symlink (a symlink or a special file, which cannot be
// opened to read them through a descriptor), through /proc/self/fd.
func XattrsAt(dirFD int, name string) map[string][]byte {
	p := "/proc/self/fd/" + strconv.Itoa(dirFD) + "/" + name
	return readXattrs(
		func(b []byte) (int, error) { return unix.Llistxattr(p, b) },
		func(name string, b []byte) (int, error) { return unix.Lgetxattr(p, name, b) })
}

func readXattrs(list func([]byte) (int, error), get func(string, []byte) (int, error)) map[string][]byte {
	names, err := ListXattrs(list)
	if err != nil {
		return nil
	}
	out := map[string][]byte{}
	for _, name := range names {
		v, err := GetXattr(func(b []byte) (int, error) { return get(name, b) })
		if err != nil {
			continue
		}
		out[name] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// maxXattr is the most listxattr(2) or getxattr(2) returns on Linux
// (XATTR_LIST_MAX and XATTR_SIZE_MAX, 64 KiB each).
const maxXattr = 64 << 10

// ListXattrs returns the names list reports (a listxattr(2) call: through
// a descriptor, a path, or /proc/self/fd), with a buffer that grows while
// the list outgrows it (ERANGE, up to 64 KiB); none on a filesystem
// without extended attributes (ENOTSUP). Errors: list's.
func ListXattrs(list func([]byte) (int, error)) ([]string, error) {
	b, err := readGrowing(list)
	if errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return splitNul(b), nil
}

// GetXattr returns the value get reports (a getxattr(2) call of one
// attribute), with a buffer that grows like ListXattrs'. Errors: get's
// (ENODATA: no such attribute, or removed since it was listed).
func GetXattr(get func([]byte) (int, error)) ([]byte, error) {
	return readGrowing(get)
}

// readGrowing calls read with a buffer of 256 bytes, then 4 times larger
// while it reports ERANGE, up to maxXattr.
func readGrowing(read func([]byte) (int, error)) ([]byte, error) {
	for size := 256; ; size *= 4 {
		b := make([]byte, min(size, maxXattr))
		n, err := read(b)
		if errors.Is(err, unix.ERANGE) && size < maxXattr {
			continue
		}
		if err != nil {
			return nil, err
		}
		return b[:n], nil
	}
}

// splitNul splits a list of NUL-terminated names (listxattr(2)'s).
func splitNul(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, string(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
}

package dirfd

import (
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
	size, err := list(nil)
	if err != nil || size <= 0 {
		return nil
	}
	buf := make([]byte, size)
	if size, err = list(buf); err != nil {
		return nil
	}
	out := map[string][]byte{}
	for _, name := range splitNul(buf[:size]) {
		n, err := get(name, nil)
		if err != nil {
			continue
		}
		v := make([]byte, n)
		if n, err = get(name, v); err != nil {
			continue
		}
		out[name] = v[:n]
	}
	if len(out) == 0 {
		return nil
	}
	return out
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

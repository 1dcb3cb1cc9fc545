package protectscan

import (
	"context"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// Aliases returns the other names of the file (dev, ino) beneath roots
// (canonical absolute directories): each entry of that identity but skip,
// found by reading every directory of roots on device dev (a hard link
// cannot cross file systems), without following a symlink or entering
// another file system. It stops once it has want names. A protected file
// of more than one link is reachable by its other names, which its
// protection does not cover (a user's ~/.bashrc hard-linked into a
// dotfiles checkout; a `.git/config` a command linked while the host's
// rewrite left it writable): the runner protects those names too. A root
// that is missing or not on dev is skipped; a directory that vanished
// while read is too. Errors: *BudgetError past DefaultMaxEntries entries
// read, ctx's error, or a directory that could not be read.
func Aliases(ctx context.Context, roots []string, dev, ino uint64, skip string, want int) ([]string, error) {
	var out []string
	entries := 0
	buf := make([]byte, direntBufBytes)
	type dir struct {
		fd   int
		path string
	}
	var stack []dir
	defer func() {
		for _, d := range stack {
			_ = unix.Close(d.fd)
		}
	}()
	push := func(fd int, path string) bool {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || uint64(st.Dev) != dev { //nolint:unconvert // Dev is uint64 on most arches only
			_ = unix.Close(fd)
			return false
		}
		stack = append(stack, dir{fd, path})
		return true
	}
	for _, r := range roots {
		fd, err := dirfd.OpenNoSymlinks(r, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			continue
		}
		push(fd, r)
	}
	for len(stack) > 0 && len(out) < want {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		err := func() error {
			defer func() { _ = unix.Close(d.fd) }()
			for {
				n, err := getdents(d.fd, buf)
				if err != nil {
					return &os.PathError{Op: "getdents", Path: d.path, Err: err}
				}
				if n <= 0 {
					return nil
				}
				rest := buf[:n]
				for {
					e, r, ok, err := nextDirent(rest, d.path)
					if err != nil {
						return err
					}
					if !ok {
						break
					}
					rest = r
					if skipDirent(&e) {
						continue
					}
					if entries++; entries > DefaultMaxEntries {
						return &BudgetError{Dir: d.path, Entries: entries}
					}
					typ := e.typ
					var st unix.Stat_t
					if typ == unix.DT_UNKNOWN || (typ == unix.DT_REG && e.ino == ino) {
						if fstatat(d.fd, string(e.name), &st) != nil {
							continue // gone since it was listed
						}
						typ = direntType(&st)
					}
					p := filepath.Join(d.path, string(e.name))
					switch {
					case typ == unix.DT_DIR:
						if fd, err := openat(d.fd, string(e.name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC); err == nil {
							push(fd, p)
						}
					case typ == unix.DT_REG && uint64(st.Dev) == dev && st.Ino == ino && p != skip && !slices.Contains(out, p): //nolint:unconvert // Dev is uint64 on most arches only
						out = append(out, p)
					}
				}
			}
		}()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

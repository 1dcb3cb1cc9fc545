package protectscan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// Aliases returns the other names of the file (dev, ino) beneath roots
// (canonical absolute directories): each entry of that identity but skip,
// found by reading every directory of roots on device dev (a hard link
// cannot cross file systems), reached without a symlink and without
// entering another file system, one directory open at a time. It stops
// once it has want names. A protected file of more than one link is
// reachable by its other names, which its protection does not cover (a
// user's ~/.bashrc hard-linked into a dotfiles checkout; a `.git/config` a
// command linked while the host's rewrite left it writable): the runner
// protects those names too. A root that is missing or not on dev is
// skipped, and so is a directory the server may not read (its user's
// commands may not either). complete is false when a directory vanished or
// was replaced while the walk ran (a name may have moved with it: walk
// again). Errors: *BudgetError past DefaultMaxEntries entries read, ctx's
// error, a directory that could not be opened or read for another reason
// (no descriptor left): the caller fails closed.
func Aliases(ctx context.Context, roots []string, dev, ino uint64, skip string, want int) (names []string, complete bool, err error) {
	complete = true
	entries := 0
	buf := make([]byte, direntBufBytes)
	stack := slices.Clone(roots)
	slices.Reverse(stack)
	for len(stack) > 0 && len(names) < want {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fd, err := dirfd.OpenNoSymlinks(dir, unix.O_RDONLY|unix.O_DIRECTORY)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
			if !slices.Contains(roots, dir) {
				complete = false // gone or replaced since its parent was read
			}
			continue
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			continue
		case err != nil:
			return nil, false, &os.PathError{Op: "open", Path: dir, Err: err}
		}
		err = func() error {
			defer func() { _ = unix.Close(fd) }()
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return &os.PathError{Op: "fstat", Path: dir, Err: err}
			}
			if uint64(st.Dev) != dev { //nolint:unconvert // Dev is uint64 on most arches only
				return nil // another file system: no link of the file there
			}
			for {
				n, err := getdents(fd, buf)
				if err != nil {
					return &os.PathError{Op: "getdents", Path: dir, Err: err}
				}
				if n <= 0 {
					return nil
				}
				for rest := buf[:n]; ; {
					e, r, ok, err := nextDirent(rest, dir)
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
						return &BudgetError{Dir: dir, Entries: entries}
					}
					typ := e.typ
					var st unix.Stat_t
					if typ == unix.DT_UNKNOWN || (typ == unix.DT_REG && e.ino == ino) {
						if fstatat(fd, string(e.name), &st) != nil {
							complete = false // gone since it was listed
							continue
						}
						typ = direntType(&st)
					}
					p := filepath.Join(dir, string(e.name))
					switch {
					case typ == unix.DT_DIR:
						stack = append(stack, p)
					case typ == unix.DT_REG && uint64(st.Dev) == dev && st.Ino == ino && p != skip && !slices.Contains(names, p): //nolint:unconvert // Dev is uint64 on most arches only
						names = append(names, p)
					}
				}
			}
		}()
		if err != nil {
			return nil, false, err
		}
	}
	return names, complete, nil
}

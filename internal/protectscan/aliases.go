package protectscan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

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
// skipped. complete is false when the walk found fewer than want names and
// may have missed one: a directory vanished or was replaced while it ran,
// or one it read changed (its identity, or a change time from AliasesRacy
// before the walk began on: a name moved from a directory not yet read
// into one already read leaves no other trace); walk again. Errors:
// *BudgetError past DefaultMaxEntries entries read, ctx's error, a
// directory that could not be opened or read (an unreadable one
// included: its owner's command may make it readable again), as an
// *os.PathError: the caller fails closed.
func Aliases(ctx context.Context, roots []string, dev, ino uint64, skip string, want int) (names []string, complete bool, err error) {
	complete = true
	began := time.Now().Add(-AliasesRacy)
	entries := 0
	buf := make([]byte, direntBufBytes)
	var read []readDir
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
			read = append(read, readDir{path: dir, ino: st.Ino})
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
	if complete && len(names) < want {
		complete = unchangedSince(read, dev, began)
	}
	return names, complete, nil
}

// AliasesRacy is how long before a walk began a directory's change time
// counts as a change during it (Aliases): the kernel stamps changes with a coarse
// clock, a tick (up to 10 ms) behind the walk's.
const AliasesRacy = 20 * time.Millisecond

// readDir is a directory Aliases read: its path and inode.
type readDir struct {
	path string
	ino  uint64
}

// unchangedSince reports whether each directory of read is, reached
// without a symlink, still the one read and changed neither its entries
// (mtime) nor itself (ctime) from began on.
func unchangedSince(read []readDir, dev uint64, began time.Time) bool {
	for _, d := range read {
		st, err := dirfd.StatNoSymlinks(d.path)
		if err != nil || uint64(st.Dev) != dev || st.Ino != d.ino || //nolint:unconvert // Dev is uint64 on most arches only
			!time.Unix(st.Mtim.Unix()).Before(began) || !time.Unix(st.Ctim.Unix()).Before(began) {
			return false
		}
	}
	return true
}

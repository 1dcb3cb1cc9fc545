package subproc

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// ErrHolderChanged is Hold's error for a holder that is gone or another
// file than the one the search found.
var ErrHolderChanged = errors.New("the view changed since the search")

// Hold opens each of holders (a path and its identity when the search found
// it) without following any symlink, and returns them held, to be set as
// Confinement.Held: the inner stage then tells a holder removed since (no
// link left: its paths may be missing from the view) from one moved
// elsewhere (still linked: its paths, at the new place, would be writable
// to the command; the start is a change). A holder missing already, or
// another file than the one found, is an error, nothing held: the view
// changed since the search, which must be made again (issue 34: a
// nested repository's directory moved aside between the search and the
// start).
func Hold(holders []Protected) (*Held, error) {
	h := &Held{paths: make([]string, 0, len(holders)), files: make([]*os.File, 0, len(holders))}
	for _, p := range holders {
		fd, err := dirfd.OpenNoSymlinks(p.Path, dirfd.OPath|unix.O_NOFOLLOW)
		if err != nil {
			h.Close()
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				return nil, fmt.Errorf("%w: the path %s, which holds protected paths, is gone since the search found it (%w)", ErrHolderChanged, p.Path, err)
			}
			return nil, fmt.Errorf("cannot hold the path %s, which holds protected paths: %w", p.Path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			h.Close()
			return nil, fmt.Errorf("cannot hold the path %s, which holds protected paths: %w", p.Path, err)
		}
		if uint64(st.Dev) != p.Dev || st.Ino != p.Ino { //nolint:unconvert // Dev is uint64 on most arches only
			_ = unix.Close(fd)
			h.Close()
			return nil, fmt.Errorf("%w: the path %s, which holds protected paths, is another file than the search found", ErrHolderChanged, p.Path)
		}
		h.paths = append(h.paths, p.Path)
		h.files = append(h.files, os.NewFile(uintptr(fd), p.Path))
	}
	return h, nil
}

// heldFiles returns h's files, and sets c.HolderFDs to their descriptors in
// the inner stage: from first up, in order.
func (h *Held) heldFiles(c *Confinement, first int) []*os.File {
	if h == nil || len(h.files) == 0 {
		return nil
	}
	c.HolderFDs = make(map[string]int, len(h.paths))
	for i, p := range h.paths {
		c.HolderFDs[p] = first + i
	}
	return h.files
}

// removedHolder reports whether c's holder at path, held open since the
// search (Confinement.HolderFDs), has no link left: removed, not moved.
func removedHolder(c *Confinement, path string) bool {
	fd, ok := c.HolderFDs[path]
	var st unix.Stat_t
	return ok && unix.Fstat(fd, &st) == nil && st.Nlink == 0
}

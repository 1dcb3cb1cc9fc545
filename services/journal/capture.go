package journal

import (
	"errors"
	"io"
	"os"
	"path"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// Special is the type of a node that is neither a file, a directory nor a
// symlink (a FIFO, a socket, a device): its metadata is kept, it has no
// content.
const Special = "special"

// Capture records the prior state of the entry name in the open directory
// parent, displayed as p (its canonical path), into the change's Before,
// and returns the nodes it added, the entry's own first: nothing when
// nothing is there. A file's content is streamed into the journal (see
// AddBlob for the cap), with its mode, owner, extended attributes and
// modification time; a symlink's target (never followed); a directory and
// every entry beneath it, parents before children, no symlink followed.
// A file larger (by its fstat) than the room left under the cap is not
// read: its node has no Hash and the change keeps no content (Kept false).
// Errors: the filesystem's (*os.PathError), the context's (SetContext),
// *Error with CodeFailed.
func (t *Txn) Capture(parent *dirfd.Parent, name, p string) ([]Node, error) {
	first := len(t.e.Before)
	if err := t.capture(parent, name, p); err != nil {
		return nil, err
	}
	return t.e.Before[first:], nil
}

// CaptureNode is Capture without descending: a directory's own node only
// (a move, which keeps what lies beneath, records just the entry it moves).
func (t *Txn) CaptureNode(parent *dirfd.Parent, name, p string) ([]Node, error) {
	first := len(t.e.Before)
	if err := t.captureEntry(parent, name, p, false); err != nil {
		return nil, err
	}
	return t.e.Before[first:], nil
}

func (t *Txn) capture(parent *dirfd.Parent, name, p string) error {
	return t.captureEntry(parent, name, p, true)
}

func (t *Txn) captureEntry(parent *dirfd.Parent, name, p string, deep bool) error {
	st, err := parent.Stat(name, false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	n := Node{
		Path: p, Mode: dirfd.Perm(&st), UID: st.Uid, GID: st.Gid, Size: st.Size,
		MTime: st.Mtim.Nano(), Ino: st.Ino, Dev: dirfd.Dev(&st),
	}
	switch {
	case dirfd.IsRegular(&st):
		return t.captureFile(parent, name, n)
	case dirfd.IsSymlink(&st):
		n.Type = Symlink
		if n.Link, err = readlink(parent.FD(), name); err != nil {
			return &os.PathError{Op: "readlink", Path: p, Err: err}
		}
		n.Xattrs = dirfd.XattrsAt(parent.FD(), name)
		t.e.Before = append(t.e.Before, n)
		return nil
	case dirfd.IsDir(&st):
		return t.captureDir(parent, name, n, deep)
	default:
		n.Type, n.Size = Special, 0
		n.Xattrs = dirfd.XattrsAt(parent.FD(), name)
		t.e.Before = append(t.e.Before, n)
		return nil
	}
}

func (t *Txn) captureFile(parent *dirfd.Parent, name string, n Node) error {
	fd, err := unix.Openat(parent.FD(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: n.Path, Err: err}
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: n.Path, Err: err}
	}
	if st.Ino != n.Ino || dirfd.Dev(&st) != n.Dev || !dirfd.IsRegular(&st) {
		// Replaced between the stat and the open: take what was opened.
		n.Mode, n.UID, n.GID, n.MTime, n.Ino, n.Dev = dirfd.Perm(&st), st.Uid, st.Gid, st.Mtim.Nano(), st.Ino, dirfd.Dev(&st)
	}
	n.Type = File
	n.Xattrs = dirfd.Xattrs(fd)
	if st.Size > t.Room() {
		// It cannot be kept: not read at all (no hash), however large.
		n.Size = st.Size
		if err := t.skipContent(st.Size); err != nil {
			return err
		}
		t.e.Before = append(t.e.Before, n)
		return nil
	}
	hash, size, err := t.AddBlob(fdReader{fd: fd, path: n.Path}, st.Size)
	if err != nil {
		return err
	}
	n.Hash, n.Size = hash, size
	t.e.Before = append(t.e.Before, n)
	return nil
}

func (t *Txn) captureDir(parent *dirfd.Parent, name string, n Node, deep bool) error {
	dir, err := parent.OpenDirNoFollow(name)
	if err != nil {
		return err
	}
	defer dir.Close() //nolint:errcheck // directory descriptor
	n.Type, n.Size = Dir, 0
	n.Xattrs = dirfd.Xattrs(dir.FD())
	t.e.Before = append(t.e.Before, n)
	if !deep {
		return nil
	}
	names, err := dir.Names()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, child := range names {
		if err := t.capture(dir, child, path.Join(n.Path, child)); err != nil {
			return err
		}
	}
	return nil
}

// fdReader reads the open descriptor fd (io.Reader).
type fdReader struct {
	fd   int
	path string
}

func (r fdReader) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(r.fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: r.path, Err: err}
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// readlink returns the target of the symlink name in the directory fd.
func readlink(fd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

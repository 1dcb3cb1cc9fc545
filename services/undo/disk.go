package undo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/journal"
)

// errUnsafe marks a path whose directories no longer resolve without a
// symlink: a symlink (or magic link) planted on the way after the change.
var errUnsafe = errors.New("a directory on the way is now a symlink")

// openParent opens the directory holding the canonical path p, resolving
// it from "/" with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS: a symlink on
// the way fails with errUnsafe (wrapping ELOOP), never followed. It returns
// the directory, beneath which every later call addresses the single name
// base, and base. A missing directory is an *os.PathError wrapping ENOENT.
func openParent(p string) (par *dirfd.Parent, base string, err error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return nil, "", &os.PathError{Op: "resolve", Path: p, Err: unix.EINVAL}
	}
	dir, base := filepath.Split(p)
	if dir != "/" {
		dir = strings.TrimSuffix(dir, "/")
	}
	d, err := dirfd.OpenBeneath(dir)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, "", errors.Join(errUnsafe, err)
		}
		return nil, "", err
	}
	defer d.Close() //nolint:errcheck // the parent keeps its own descriptor
	par, _, err = d.OpenParent("", false)
	return par, base, err
}

// readNode returns the state of the entry base inside par, never following
// a symlink at it, as a Node for path p; nil when nothing is there. A
// file's content is hashed ("sha256:<hex>"), a symlink's target read.
func readNode(par *dirfd.Parent, base, p string) (*journal.Node, error) {
	st, err := par.Stat(base, false)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := &journal.Node{
		Path: p, Mode: dirfd.Perm(&st), UID: st.Uid, GID: st.Gid,
		MTime: st.Mtim.Nano(), Ino: st.Ino, Dev: dirfd.Dev(&st),
	}
	switch {
	case dirfd.IsDir(&st):
		n.Type = journal.Dir
		n.Xattrs = dirfd.XattrsAt(par.FD(), base)
	case dirfd.IsSymlink(&st):
		n.Type = journal.Symlink
		if n.Link, err = readlinkat(par, base); err != nil {
			return nil, err
		}
	case dirfd.IsRegular(&st):
		n.Type = journal.File
		n.Size = st.Size
		if n.Hash, err = hashFile(par, base); err != nil {
			return nil, err
		}
		n.Xattrs = dirfd.XattrsAt(par.FD(), base)
	default:
		n.Type = journal.Special
	}
	return n, nil
}

// readlinkat reads the target of the symlink base inside par.
func readlinkat(par *dirfd.Parent, base string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(par.FD(), base, buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: par.Join(base), Err: err}
	}
	return string(buf[:n]), nil
}

// hashFile returns "sha256:<hex>" of the regular file base inside par,
// opened without following a symlink and without blocking.
func hashFile(par *dirfd.Parent, base string) (string, error) {
	fd, err := par.Open(base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), par.Join(base))
	defer f.Close() //nolint:errcheck // read-only descriptor
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hashPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// hashPrefix begins every content key (Node.Hash).
const hashPrefix = "sha256:"

// lookNode reads the state now at the canonical path p: nil when absent
// (its directory missing, or not a directory, included). A symlink on the
// way is errUnsafe.
func lookNode(p string) (*journal.Node, error) {
	par, base, err := openParent(p)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer par.Close() //nolint:errcheck // read-only use
	return readNode(par, base, p)
}

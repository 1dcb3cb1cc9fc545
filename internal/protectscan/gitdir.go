package protectscan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// maxPointerBytes bounds what is read of a `.git` or `commondir` file.
const maxPointerBytes = 4 << 10

// followGitdirs adds, for each path a `.git` file named, the directory when
// it is a real directory inside one of the roots, and its commondir likewise.
func (w *walk) followGitdirs() error {
	for _, target := range w.gitdirs {
		if err := w.ctx.Err(); err != nil {
			return fmt.Errorf("following gitdir %s: %w", target, err)
		}
		r, fd, ok, err := w.resolve(target)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		common, ok, err := readPointer(fd, "commondir", filepath.Join(target, "commondir"), "", r.owner)
		_ = unix.Close(fd)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !filepath.IsAbs(common) {
			common = filepath.Join(target, common)
		}
		_, fd, ok, err = w.resolve(filepath.Clean(common))
		if err != nil {
			return err
		}
		if ok {
			_ = unix.Close(fd)
		}
	}
	return nil
}

// resolve opens target (clean, absolute) as a directory inside one of the
// roots, the innermost first, and records it as an entry. It returns the
// root it lies in and an O_PATH descriptor on it, which the caller closes;
// ok is false when target is not a real directory inside any root (in a
// Shared root: one whose every component below the root belongs to Owner).
func (w *walk) resolve(target string) (*openedRoot, int, bool, error) {
	roots := slices.Clone(w.roots)
	slices.SortStableFunc(roots, func(a, b *openedRoot) int { return len(b.Path) - len(a.Path) })
	for _, r := range roots {
		rel, ok := below(r.Path, target)
		if !ok {
			continue
		}
		fd, st, ok, err := openBeneath(r, rel, target)
		if err != nil {
			return nil, -1, false, err
		}
		if ok {
			w.found[target] = Entry{Path: target, Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: true}
			w.gitDirs[target] = true
			return r, fd, true, nil
		}
	}
	return nil, -1, false, nil
}

// below returns target's path relative to root ("" for root itself) when
// target is root or lies inside it (both clean and absolute).
func below(root, target string) (string, bool) {
	if target == root {
		return "", true
	}
	if root == "/" {
		return target[1:], true
	}
	rel, ok := strings.CutPrefix(target, root+"/")
	return rel, ok && rel != ""
}

// openBeneath opens rel (clean, relative, at target) from root r one
// component at a time, as O_PATH directories opened with O_NOFOLLOW, so no
// symlink is followed. In a Shared root every component must belong to
// Owner. ok is false when a component is missing, not a directory, a symlink
// or another owner's.
func openBeneath(r *openedRoot, rel, target string) (int, unix.Stat_t, bool, error) {
	var st unix.Stat_t
	if rel == "" {
		// The gitdir is the root itself (git init --separate-git-dir
		// into an extra writable root): protected whole, when it holds a
		// HEAD file, so a stray pointer cannot make a whole root
		// read-only.
		var head unix.Stat_t
		if err := unix.Fstatat(r.fd, "HEAD", &head, unix.AT_SYMLINK_NOFOLLOW); err != nil || head.Mode&unix.S_IFMT != unix.S_IFREG {
			return -1, st, false, nil
		}
		fd, err := unix.Dup(r.fd)
		if err != nil {
			return -1, st, false, &os.PathError{Op: "dup", Path: target, Err: err}
		}
		unix.CloseOnExec(fd)
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return -1, st, false, &os.PathError{Op: "fstat", Path: target, Err: err}
		}
		return fd, st, true, nil
	}
	cur := r.fd
	for comp := range strings.SplitSeq(rel, "/") {
		fd, err := openat(cur, comp, dirfd.OPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
		if cur != r.fd {
			_ = unix.Close(cur)
		}
		if err != nil {
			if vanished(err) {
				return -1, st, false, nil
			}
			return -1, st, false, &os.PathError{Op: "open", Path: target, Err: err}
		}
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return -1, st, false, &os.PathError{Op: "fstat", Path: target, Err: err}
		}
		if r.Shared && int(st.Uid) != r.Owner {
			_ = unix.Close(fd)
			return -1, st, false, nil
		}
		cur = fd
	}
	return cur, st, true, nil
}

// readPointer returns the content of the file name in dirfd (at path)
// with trailing CR and LF cut and prefix cut from its start, as git reads a
// `.git` file ("gitdir: ") and a commondir file. The file is opened only when lstat says
// it is a regular file, without following a symlink and without blocking,
// and read only when fstat of the open still says so (and, when owner is not
// -1, that owner has it); at most maxPointerBytes are read. ok is false when
// it is not such a file, or its line lacks prefix or is empty.
func readPointer(dirfd int, name, path, prefix string, owner int) (string, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if vanished(err) {
			return "", false, nil
		}
		return "", false, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false, nil
	}
	fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		if vanished(err) || errors.Is(err, unix.ENXIO) {
			return "", false, nil
		}
		return "", false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	if err := unix.Fstat(fd, &st); err != nil {
		return "", false, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || (owner >= 0 && int(st.Uid) != owner) {
		return "", false, nil
	}
	buf := make([]byte, maxPointerBytes)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return "", false, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m <= 0 {
			break
		}
		n += m
	}
	if n == len(buf) {
		return "", false, nil // longer than any path git would take
	}
	// As git reads a gitfile and a commondir file: the whole content,
	// only trailing CR and LF cut (a path may end in a space).
	line, ok := strings.CutPrefix(strings.TrimRight(string(buf[:n]), "\r\n"), prefix)
	return line, ok && line != "", nil
}

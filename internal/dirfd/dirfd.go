// Package dirfd is the directory handle every mutation of the harness runs
// beneath. A confined handle resolves paths with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS, so the kernel refuses, at syscall
// time, any path that would leave the directory (through "..", an absolute or
// relative symlink, or a /proc magic link). The host handle runs the very same
// code with no resolve restrictions: it is the whole filesystem as the process
// sees it.
//
// Operations that create, rename, link or remove an entry take an opened
// parent directory and a single name, so their final component is never
// resolved through a path.
//
// What a confined handle does not protect: it does not stop reads (callers do
// not route reads through it), it does not stop a bind mount inside the
// directory from reaching elsewhere (mount points are crossed), and it does
// not confine other processes.
package dirfd

import (
	"errors"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxEAGAINRetries bounds retries of openat2, which may answer EAGAIN when a
// concurrent rename makes it unable to prove that ".." stayed beneath the
// directory; the kernel documents a retry as the remedy.
const maxEAGAINRetries = 64

// beneath is the resolve set of a confined handle.
const beneath = resolveBeneath | resolveNoMagiclinks

// Dir is a directory handle. The zero value is not usable; use Host or
// OpenBeneath.
type Dir struct {
	fd      int    // directory descriptor, or AT_FDCWD for the host handle
	resolve uint64 // openat2 resolve flags applied to every path
	path    string // absolute path of the directory, for messages
}

// Host returns the unconfined handle on the whole filesystem. Relative paths
// given to it are taken from "/". It holds no descriptor; Close is a no-op.
func Host() *Dir {
	return &Dir{fd: unix.AT_FDCWD, path: "/"}
}

// OpenNoSymlinks opens the absolute path with flags (and O_CLOEXEC), no
// symlink and no magic link followed in any of its components (ELOOP:
// openat2 RESOLVE_NO_SYMLINKS), retrying an interrupted open: the file
// named, never one a link was retargeted to. It returns the descriptor;
// errors are openat2's.
func OpenNoSymlinks(path string, flags uint64) (int, error) {
	return openat2(unix.AT_FDCWD, path, &openHow{Flags: flags, Resolve: resolveNoSymlinks | resolveNoMagiclinks})
}

// OpenAt opens rel beneath the directory fd with flags (and O_CLOEXEC),
// following no symlink and never leaving fd's tree (openat2
// RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS). It returns the descriptor; errors
// are openat2's (EXDEV for a path that would leave, ELOOP for a symlink).
func OpenAt(fd int, rel string, flags uint64) (int, error) {
	return openat2(fd, rel, &openHow{Flags: flags, Resolve: resolveBeneath | resolveNoSymlinks | resolveNoMagiclinks})
}

// StatNoSymlinks is the stat of the absolute path reached as
// OpenNoSymlinks reaches it (its last component not followed either).
// Errors: the open's or the stat's.
func StatNoSymlinks(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := OpenNoSymlinks(path, OPath|unix.O_NOFOLLOW)
	if err != nil {
		return st, err
	}
	err = unix.Fstat(fd, &st)
	_ = unix.Close(fd)
	return st, err
}

// OpenBeneath opens the directory at the canonical path dir and returns a
// handle that confines every later path beneath it. A symlink anywhere in dir
// is refused (ELOOP, RESOLVE_NO_SYMLINKS): the handle is the directory the
// caller named, never one a link was retargeted to. The handle is pinned: it
// keeps the directory it opened for its life. Close releases the descriptor.
func OpenBeneath(dir string) (*Dir, error) {
	fd, err := openat2(unix.AT_FDCWD, dir, &openHow{
		Flags:   OPath | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: resolveNoSymlinks | resolveNoMagiclinks,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	// Record where the kernel says the directory is, so Path and the
	// CheckBeneath of its parents use its canonical path whatever spelling
	// opened it.
	canonical := dir
	buf := make([]byte, unix.PathMax)
	if n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf); err == nil {
		canonical = string(buf[:n])
	}
	return &Dir{fd: fd, resolve: beneath, path: canonical}, nil
}

// Close releases the handle's descriptor.
func (d *Dir) Close() error {
	if d.fd == unix.AT_FDCWD || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// Confined reports whether the kernel confines paths beneath the handle.
func (d *Dir) Confined() bool { return d.resolve&resolveBeneath != 0 }

// Path returns the absolute path the handle was opened on.
func (d *Dir) Path() string { return d.path }

// Rel returns abs relative to the handle, and false when abs is not lexically
// beneath it. abs must be a clean absolute path.
func (d *Dir) Rel(abs string) (string, bool) {
	if !Beneath(d.path, abs) {
		return "", false
	}
	return strings.TrimPrefix(strings.TrimPrefix(abs, d.path), "/"), true
}

// Beneath reports whether the clean absolute path p is root or lies beneath
// it, component by component (never a bare string prefix: "/ws" does not
// contain "/ws-evil"). A root of "/" contains every absolute path; an empty
// or relative root or path contains nothing (fail closed). It is the one
// containment predicate of the fence.
func Beneath(root, p string) bool {
	if !strings.HasPrefix(root, "/") || !strings.HasPrefix(p, "/") {
		return false
	}
	if root == p || root == "/" {
		return true
	}
	return strings.HasPrefix(p, root) && len(p) > len(root) && p[len(root)] == '/'
}

// IsEscape reports whether err says a path tried to leave a confined handle
// (EXDEV from RESOLVE_BENEATH). A magic link refused by RESOLVE_NO_MAGICLINKS
// is ELOOP, indistinguishable from a symlink loop; it is refused either way.
func IsEscape(err error) bool {
	return errors.Is(err, unix.EXDEV)
}

// name turns a path relative to the handle into the path openat2 receives.
func (d *Dir) name(rel string) string {
	if rel == "" {
		rel = "."
	}
	if d.fd == unix.AT_FDCWD {
		return "/" + rel
	}
	return rel
}

// full returns the absolute spelling of rel for messages.
func (d *Dir) full(rel string) string { return path.Join(d.path, rel) }

// openat2 calls openat2(2), retrying on EINTR and a bounded number of EAGAINs.
func openat2(dirfd int, name string, how *openHow) (int, error) {
	how.Flags |= unix.O_CLOEXEC
	for range maxEAGAINRetries {
		fd, err := sysOpenat2(dirfd, name, how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}

// confinedPath returns the directory a confined handle keeps paths beneath,
// or "" for the host handle.
func (d *Dir) confinedPath() string {
	if !d.Confined() {
		return ""
	}
	return d.path
}

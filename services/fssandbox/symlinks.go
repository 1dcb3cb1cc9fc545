package fssandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
)

// maxSymlinkHops bounds the links followed while checking one path: Linux's
// MAXSYMLINKS (40). A path with more fails at the mutation (ELOOP).
const maxSymlinkHops = 40

// stickyWorldWritable are the mode bits of a shared directory such as /tmp,
// where the kernel's protected_symlinks rule applies.
const stickyWorldWritable = unix.S_ISVTX | 0o002

// errProtectedSymlink is the cause of a refusal by checkSymlinks.
var errProtectedSymlink = errors.New("a symlink in a sticky world-writable directory owned by another user")

// checkSymlinks applies the kernel's fs.protected_symlinks rule to the clean
// absolute display path dp whatever the host's sysctl says: it walks dp as the
// kernel resolves it, and refuses to follow a symlink that lies in a sticky,
// world-writable directory unless the link is owned by the process's
// effective user or by the directory's owner (so another user's link planted
// in /tmp never redirects a write onto that user's, or anyone's, file). The
// final component counts, and so does every link met on the way. A missing
// component ends the walk: what follows is created, nothing is followed.
// Errors: a CodePermissionDenied *fs.Error naming the link, its owner and the
// directory.
func checkSymlinks(dp string) error {
	if meetsNoSymlink(dp) {
		return nil
	}
	euid := uint32(os.Geteuid())
	todo := strings.Split(dp, "/")
	cur := "/"
	for hops := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, name)
		var st unix.Stat_t
		if unix.Lstat(next, &st) != nil {
			return nil
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			cur = next
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return nil
		}
		var dir unix.Stat_t
		if err := unix.Stat(cur, &dir); err != nil {
			return nil
		}
		if dir.Mode&stickyWorldWritable == stickyWorldWritable && st.Uid != euid && st.Uid != dir.Uid {
			return &fs.Error{
				Code: fs.CodePermissionDenied,
				Op:   "write",
				Path: dp,
				Message: fmt.Sprintf("cannot write %q: refusing to follow the symlink %q, owned by uid %d, in the sticky world-writable directory %q (the kernel's protected_symlinks rule)",
					dp, next, st.Uid, cur),
				Err: &os.PathError{Op: "follow", Path: next, Err: errProtectedSymlink},
			}
		}
		dest, err := readlink(next)
		if err != nil {
			return nil
		}
		if strings.HasPrefix(dest, "/") {
			cur = "/"
		}
		todo = append(strings.Split(dest, "/"), todo...)
	}
	return nil
}

// meetsNoSymlink reports whether the kernel resolves the clean absolute path
// dp, as far as it exists, without meeting a symlink: one openat2 with
// RESOLVE_NO_SYMLINKS, which fails with ELOOP at the first link. Then no
// link is followed and the rule has nothing to refuse; the component-wise
// walk runs only for a path that has a link in it (or one the open cannot
// settle, such as a directory without search permission).
func meetsNoSymlink(dp string) bool {
	fd, err := dirfd.OpenNoSymlinks(dp, dirfd.OPath)
	if err == nil {
		_ = unix.Close(fd)
		return true
	}
	// A missing component, or a file where a directory was expected, ends
	// the kernel's walk as it ends checkSymlinks's: nothing after it is
	// followed.
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// readlink returns the destination of the symlink p.
func readlink(p string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(p, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

package atomicwrite

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// prior is the regular file a Replace finds at the target: a path-only
// descriptor (O_PATH: it needs no permission on the file) and its fstat.
type prior struct {
	fd int
	st unix.Stat_t
}

// openPrior opens what is at name inside p, following a final symlink
// beneath p as the target's probe does. It returns nil without error when
// there is no regular file to keep the metadata of: nothing there, a
// dangling symlink, a symlink leading out of a confined parent (the rename
// replaces the link itself), or anything but a regular file.
func openPrior(p *dirfd.Parent, name string) (*prior, error) {
	fd, err := p.Open(name, dirfd.OPath, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), dirfd.IsEscape(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	pr := &prior{fd: fd}
	if err := unix.Fstat(fd, &pr.st); err != nil {
		pr.close()
		return nil, &os.PathError{Op: "fstat", Path: p.Join(name), Err: err}
	}
	if !dirfd.IsRegular(&pr.st) {
		pr.close()
		return nil, nil
	}
	return pr, nil
}

func (pr *prior) close() {
	if pr != nil && pr.fd >= 0 {
		_ = unix.Close(pr.fd)
		pr.fd = -1
	}
}

// writable refuses a target the process may not write (spec difference 9,
// the user's permission intent): one with no write bit at all, which root
// could otherwise write, or one faccessat(W_OK, AT_EACCESS) refuses for the
// effective user. Other faccessat errors leave the decision to publication.
func (pr *prior) writable(p *dirfd.Parent, name string) error {
	if pr == nil {
		return nil
	}
	if pr.st.Mode&0o222 == 0 {
		return &DeniedError{Path: p.Join(name), Reason: notWritable, Err: unix.EACCES}
	}
	err := unix.Faccessat(p.FD(), name, unix.W_OK, unix.AT_EACCESS)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		return &DeniedError{Path: p.Join(name), Reason: notWritable, Err: err}
	}
	return nil
}

// notWritable is the Reason of a target this process may not write.
const notWritable = "the file is not writable"

// errCannotKeep says the new file cannot be given the replaced file's owner,
// group or extended attributes by this process.
var errCannotKeep = errors.New("cannot keep the file's owner, group or extended attributes")

// copyTo gives the temp file fd the replaced file's owner and group, its
// extended attributes (POSIX ACLs included) and its permission bits, in that
// order: a chown clears set-id bits, and setting an access ACL rewrites the
// group bits, so the mode comes last. A refusal (EPERM, EACCES) wraps
// errCannotKeep. path names the temp file in messages.
func (pr *prior) copyTo(fd int, path string) error {
	var mine unix.Stat_t
	if err := unix.Fstat(fd, &mine); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if mine.Uid != pr.st.Uid || mine.Gid != pr.st.Gid {
		if err := unix.Fchown(fd, int(pr.st.Uid), int(pr.st.Gid)); err != nil {
			return keepErr("chown", path, err)
		}
	}
	if err := copyXattrs(pr.fd, fd, path); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, uint32(pr.st.Mode&0o777)); err != nil { //nolint:unconvert // Mode is uint16 on darwin
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return nil
}

// keepErr wraps errCannotKeep around a refusal, or returns err as is.
func keepErr(op, path string, err error) error {
	perr := &os.PathError{Op: op, Path: path, Err: err}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%w: %w", errCannotKeep, perr)
	}
	return perr
}

// copyXattrs makes the extended attributes of the temp file dst those of the
// file behind the path-only descriptor src: each one src has is set, and
// each one dst got from elsewhere (a default ACL the new file inherited) is
// removed, except in the security namespace, which the kernel labels.
func copyXattrs(src, dst int, path string) error {
	from := "/proc/self/fd/" + strconv.Itoa(src)
	want, err := dirfd.ListXattrs(func(b []byte) (int, error) { return unix.Listxattr(from, b) })
	if err != nil {
		return keepErr("listxattr", path, err)
	}
	have, err := dirfd.ListXattrs(func(b []byte) (int, error) { return unix.Flistxattr(dst, b) })
	if err != nil {
		return keepErr("listxattr", path, err)
	}
	for _, name := range have {
		if slices.Contains(want, name) || strings.HasPrefix(name, "security.") {
			continue
		}
		if err := unix.Fremovexattr(dst, name); err != nil && !errors.Is(err, unix.ENODATA) {
			return keepErr("removexattr "+name, path, err)
		}
	}
	for _, name := range want {
		val, err := dirfd.GetXattr(func(b []byte) (int, error) { return unix.Getxattr(from, name, b) })
		if errors.Is(err, unix.ENODATA) {
			continue // removed meanwhile
		}
		if err != nil {
			return keepErr("getxattr "+name, path, err)
		}
		if err := unix.Fsetxattr(dst, name, val, 0); err != nil {
			return keepErr("setxattr "+name, path, err)
		}
	}
	return nil
}

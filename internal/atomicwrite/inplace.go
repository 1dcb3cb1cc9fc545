package atomicwrite

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// discardAndRewrite drops the temp file and rewrites the replaced file in
// place instead (see rewrite), for the reason why; cause is the error that
// stopped publication.
func (w *writer) discardAndRewrite(ctx context.Context, why InPlace, cause error) (Result, error) {
	if cerr := w.cleanup(); cerr != nil {
		return Result{}, doubleFault(cause, cerr)
	}
	if w.fd >= 0 {
		_ = unix.Close(w.fd)
		w.fd = -1
	}
	return w.rewrite(ctx, why, cause)
}

// rewrite is the last resort of a Replace whose publication is refused: it
// writes the content into the existing file through a descriptor opened
// beneath the parent (write, truncate, fsync). It is not atomic: a reader
// may see a mix, and a crash may leave one; it is outside the crash-safety
// guarantee. It runs only when the target is a regular file with one link
// that this process may write (Write checked), whose directory is still
// beneath the parent's root, and never after an escape the kernel refused.
// Otherwise the error says why publication failed: a *DeniedError naming the
// directory for a refused publication, or one naming the file when its
// metadata could not be kept.
func (w *writer) rewrite(ctx context.Context, why InPlace, cause error) (Result, error) {
	var res Result
	if err := w.ready(); err != nil {
		return res, err
	}
	target := w.p.Join(w.req.Name)
	refused := func() error {
		if why == InPlaceDirDenied {
			return &DeniedError{Path: target, Dir: w.p.Path(), Err: cause}
		}
		return &DeniedError{Path: target, Reason: "the file has more than one link, and this process cannot give a new file its owner or ACL", Err: cause}
	}
	if w.prior == nil || w.prior.st.Nlink != 1 || dirfd.IsEscape(cause) {
		return res, refused()
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if err := w.p.CheckBeneath(); err != nil {
		return res, err
	}
	fd, err := w.p.Open(w.req.Name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return res, refused()
	}
	if err != nil {
		return res, err
	}
	defer unix.Close(fd) //nolint:errcheck // fsynced below when durability asks
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return res, &os.PathError{Op: "fstat", Path: target, Err: err}
	}
	if st.Dev != w.prior.st.Dev || st.Ino != w.prior.st.Ino || st.Nlink != 1 {
		// Another file is there now; rewriting it was never asked.
		return res, &os.PathError{Op: "write", Path: target, Err: errReplaced}
	}
	b := []byte(w.req.Content)
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return res, &os.PathError{Op: "write", Path: target, Err: err}
		}
		off += n
	}
	if err := unix.Ftruncate(fd, int64(len(b))); err != nil {
		return res, &os.PathError{Op: "truncate", Path: target, Err: err}
	}
	if w.req.Durability == Full {
		if err := unix.Fsync(fd); err != nil {
			return res, &os.PathError{Op: "fsync", Path: target, Err: err}
		}
	}
	if err := unix.Fstat(fd, &res.Stat); err != nil {
		return res, &os.PathError{Op: "fstat", Path: target, Err: err}
	}
	res.InPlace = why
	return res, nil
}

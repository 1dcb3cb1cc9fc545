package atomicwrite

import (
	"context"
	"errors"
	"os"
	"strconv"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// Names and modes of the publication's entries (spec section 0, superseded
// by difference 9 for the file's mode).
const (
	// newFileMode is the mode a new file is created with, before the umask
	// and the directory's default ACL (spec difference 9).
	newFileMode = 0o666
	// stagingPerm is the staging directory's mode: private.
	stagingPerm   = 0o700
	stagingSuffix = ".tmpdir"
	tempSuffix    = ".tmp"
)

// writer is one Write in progress.
type writer struct {
	req   *Request
	p     *dirfd.Parent
	prior *prior // the regular file being replaced; nil for a new file
	fd    int    // the temp file, -1 once closed
	st    *stage // the staging fallback; nil for an unnamed temp file
	// linked is the temporary name an unnamed file is linked to before its
	// rename over the target; "" when there is none.
	linked string
	// exchanged says a verified replace swapped the temp file with the
	// replaced file, which is now at the temp name (see Request.Verify).
	exchanged bool
	// readied says Request.BeforePublish ran.
	readied bool
}

func (w *writer) close() {
	if w.fd >= 0 {
		_ = unix.Close(w.fd)
		w.fd = -1
	}
	w.prior.close()
}

// ready runs Request.BeforePublish, once.
func (w *writer) ready() error {
	if w.readied || w.req.BeforePublish == nil {
		return nil
	}
	w.readied = true
	return w.req.BeforePublish()
}

// run makes, fills and publishes the temp file, or rewrites the file in
// place where publication is refused (see InPlace).
func (w *writer) run(ctx context.Context) (Result, error) {
	var res Result
	err := w.open()
	if err == nil {
		err = w.fill()
		if errors.Is(err, errCannotKeep) {
			return w.discardAndRewrite(ctx, InPlaceMetadata, err)
		}
	}
	if err == nil && w.req.AfterStage != nil {
		dir, file := "", ""
		if w.st != nil {
			dir, file = w.st.dir.Path(), w.st.dir.Join(w.st.temp)
		}
		w.req.AfterStage(dir, file)
	}
	if err == nil {
		err = w.ready()
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = w.req.checkBeneath(w.p)
	}
	if err == nil && w.st != nil {
		err = w.req.checkBeneath(w.st.dir)
	}
	if err == nil {
		err = w.publish()
	}
	if dirDenied(err) {
		return w.discardAndRewrite(ctx, InPlaceDirDenied, err)
	}
	if err == nil && w.req.Verify != nil {
		if verr := w.req.Verify(); verr != nil {
			err = errors.Join(verr, w.undo())
		}
	}
	if err == nil {
		err = w.verify()
	}
	// Cleanup runs before the parent's fsync so that removing the staging
	// directory rides in the same journal commit as the publication.
	cerr := w.cleanup()
	published := err == nil || errors.Is(err, errReplaced)
	if cerr != nil && !published {
		// A double fault: the write failed and so did its cleanup. Report
		// both rather than hide the residue (spec decision 5).
		return res, doubleFault(err, cerr)
	}
	if err != nil {
		return res, err
	}
	res.Residue = cerr
	if w.req.Durability == Full {
		if err := w.req.Syncs.Sync(w.p); err != nil {
			return res, err
		}
	}
	if err := unix.Fstat(w.fd, &res.Stat); err != nil {
		return res, &os.PathError{Op: "fstat", Path: w.p.Join(w.req.Name), Err: err}
	}
	return res, nil
}

// open makes the temp file: unnamed in the parent, or, where the filesystem
// refuses O_TMPFILE, inside a new staging directory.
func (w *writer) open() error {
	if !w.req.noUnnamed {
		fd, err := w.p.Open(".", oTmpfile|unix.O_WRONLY, newFileMode)
		if err == nil {
			w.fd = fd
			return nil
		}
		if !unnamedRefused(err) {
			return err
		}
	}
	s, err := newStage(w.p, w.req)
	if s != nil {
		w.st, w.fd = s, s.fd
	}
	return err
}

// unnamedRefused reports whether err says the filesystem (or the kernel)
// does not make unnamed files: EOPNOTSUPP from a filesystem without
// O_TMPFILE, EISDIR or EINVAL from a kernel that does not know the flag.
func unnamedRefused(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL)
}

// dirDenied reports whether err is the directory refusing publication: an
// EACCES that is not a collision at the target.
func dirDenied(err error) bool {
	_, collision := errors.AsType[*CollisionError](err)
	return errors.Is(err, unix.EACCES) && !collision
}

// fill writes the content, gives the file its metadata and fsyncs it.
func (w *writer) fill() error {
	path := w.tempPath()
	if err := writeAll(w.fd, w.req.Content); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	if w.prior != nil {
		if err := w.prior.copyTo(w.fd, path); err != nil {
			return err
		}
	} else if o := w.req.Owner; o != nil {
		if err := unix.Fchown(w.fd, o.UID, o.GID); err != nil {
			return &os.PathError{Op: "chown", Path: path, Err: err}
		}
	}
	if w.req.Durability == Full {
		if w.req.BeforeSync != nil {
			w.req.BeforeSync()
		}
		if err := unix.Fsync(w.fd); err != nil {
			return &os.PathError{Op: "fsync", Path: path, Err: err}
		}
	}
	return nil
}

// tempPath names the temp file in messages.
func (w *writer) tempPath() string {
	if w.st != nil {
		return w.st.dir.Join(w.st.temp)
	}
	return w.p.Join(w.req.Name) + " (unnamed)"
}

func writeAll(fd int, content string) error {
	b := []byte(content)
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// publish makes the temp file the target.
func (w *writer) publish() error {
	if w.st != nil && w.req.Verify != nil && w.req.Publication == Replace {
		created, err := w.exchange(w.st.dir, w.st.temp)
		if created {
			w.st.tempSet = false
		}
		return err
	}
	if w.st != nil {
		return w.st.publish(w.req)
	}
	link := w.req.link
	if link == nil {
		link = unix.Linkat
	}
	self := "/proc/self/fd/" + strconv.Itoa(w.fd)
	target := w.p.Join(w.req.Name)
	if w.req.Publication == CreateOnly {
		err := link(unix.AT_FDCWD, self, w.p.FD(), w.req.Name, unix.AT_SYMLINK_FOLLOW)
		if err == nil {
			return nil
		}
		return inspectCollision(w.req, &os.LinkError{Op: "link", Old: self, New: target, Err: err})
	}
	// Hold the file's flock while it has a temporary name, so Reclaim in
	// another process never removes the name of a live writer.
	if err := unix.Flock(w.fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return &os.PathError{Op: "flock", Path: w.tempPath(), Err: err}
	}
	defer unix.Flock(w.fd, unix.LOCK_UN) //nolint:errcheck // closing the descriptor releases it too
	name := tempLinkName(w.req.Name)
	if err := link(unix.AT_FDCWD, self, w.p.FD(), name, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &os.LinkError{Op: "link", Old: self, New: w.p.Join(name), Err: err}
	}
	w.linked = name
	if w.req.Verify != nil {
		kept, err := w.exchange(w.p, name)
		if kept {
			w.linked = "" // the new file is the target now
		}
		return err
	}
	if err := unix.Renameat(w.p.FD(), name, w.p.FD(), w.req.Name); err != nil {
		return &os.LinkError{Op: "rename", Old: w.p.Join(name), New: target, Err: err}
	}
	w.linked = ""
	return nil
}

// exchange publishes the temp file at name inside dir for a verified
// replace: renameat2(RENAME_EXCHANGE) with the target, so the replaced file
// stays linked at name until the cleanup (and can be put back: undo); with
// nothing at the target, a rename that never replaces. created reports that
// the target entry is new (name is gone); otherwise, after a successful
// exchange, w.exchanged is set. A directory at the target is never replaced
// (EISDIR, exchanged back).
func (w *writer) exchange(dir *dirfd.Parent, name string) (created bool, err error) {
	target := w.p.Join(w.req.Name)
	err = renameat2(dir.FD(), name, w.p.FD(), w.req.Name, renameExchange)
	if errors.Is(err, unix.ENOENT) {
		if err := renameat2(dir.FD(), name, w.p.FD(), w.req.Name, renameNoReplace); err != nil {
			return false, &os.LinkError{Op: "rename", Old: dir.Join(name), New: target, Err: err}
		}
		return true, nil
	}
	if err != nil {
		return false, &os.LinkError{Op: "exchange", Old: dir.Join(name), New: target, Err: err}
	}
	w.exchanged = true
	if st, err := dir.Stat(name, false); err == nil && dirfd.IsDir(&st) {
		// A rename never replaces a directory with a file: nor does this.
		return false, errors.Join(&os.LinkError{Op: "rename", Old: dir.Join(name), New: target, Err: unix.EISDIR}, w.undo())
	}
	return false, nil
}

// undo takes back a publication that Request.Verify refused: it exchanges
// the replaced file back (the written file returns to the temp name, which
// the cleanup removes), or unlinks a created target if it is still the file
// written.
func (w *writer) undo() error {
	if w.exchanged {
		dir, name := w.p, w.linked
		if w.st != nil {
			dir, name = w.st.dir, w.st.temp
		}
		if err := renameat2(w.p.FD(), w.req.Name, dir.FD(), name, renameExchange); err != nil {
			return &os.LinkError{Op: "exchange back", Old: w.p.Join(w.req.Name), New: dir.Join(name), Err: err}
		}
		w.exchanged = false
		return nil
	}
	var mine unix.Stat_t
	if err := unix.Fstat(w.fd, &mine); err != nil {
		return &os.PathError{Op: "fstat", Path: w.tempPath(), Err: err}
	}
	there, err := w.p.Stat(w.req.Name, false)
	if err != nil || there.Dev != mine.Dev || there.Ino != mine.Ino {
		return nil // not the written file: someone else's entry stays
	}
	if err := unix.Unlinkat(w.p.FD(), w.req.Name, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: w.p.Join(w.req.Name), Err: err}
	}
	return nil
}

// tempLinkName returns the temporary name of an unnamed file replacing the
// target name: ".<base>.<pid>.<uuid>.tmp", base cut so the whole fits
// NAME_MAX.
func tempLinkName(name string) string {
	suffix := "." + strconv.Itoa(os.Getpid()) + "." + uuid.NewString() + tempSuffix
	return "." + cutBytes(name, nameMax-1-len(suffix)) + suffix
}

// cleanup removes the temporary name left by a failed rename, or the
// staging directory.
func (w *writer) cleanup() error {
	if w.st != nil {
		return w.st.cleanup()
	}
	if w.linked == "" {
		return nil
	}
	if err := unix.Unlinkat(w.p.FD(), w.linked, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "unlink", Path: w.p.Join(w.linked), Err: err}
	}
	w.linked = ""
	return nil
}

// verify checks that the entry now at the target is the file this write
// published, so a write whose temp file was swapped by another process
// reports an error instead of another file's version.
func (w *writer) verify() error {
	var mine unix.Stat_t
	if err := unix.Fstat(w.fd, &mine); err != nil {
		return &os.PathError{Op: "fstat", Path: w.p.Join(w.req.Name), Err: err}
	}
	there, err := w.p.Stat(w.req.Name, false)
	if err != nil {
		return err
	}
	if there.Dev != mine.Dev || there.Ino != mine.Ino {
		return &os.PathError{Op: "publish", Path: w.p.Join(w.req.Name), Err: errReplaced}
	}
	return nil
}

// errReplaced says the published entry is not the file that was written.
var errReplaced = errors.New("the published entry was replaced by another process")

// inspectCollision classifies a failed no-replace link by what is at the
// target now (L-84..L-87).
func inspectCollision(req *Request, lerr error) error {
	lstat := req.lstat
	if lstat == nil {
		lstat = func(p *dirfd.Parent, name string) (unix.Stat_t, error) { return p.Stat(name, false) }
	}
	st, err := lstat(req.Parent, req.Name)
	switch {
	case err == nil && dirfd.IsRegular(&st):
		return &CollisionError{Regular: true, Err: lerr}
	case err == nil:
		return &CollisionError{Regular: false, Err: lerr}
	case errors.Is(err, unix.ENOENT) && errors.Is(lerr, unix.EEXIST):
		// The colliding entry vanished before we looked: still a collision.
		return &CollisionError{Regular: true, Err: lerr}
	case errors.Is(err, unix.ENOENT):
		return lerr
	default:
		return err
	}
}

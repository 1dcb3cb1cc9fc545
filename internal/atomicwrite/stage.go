package atomicwrite

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// stage is one staging directory and its temp file.
type stage struct {
	parent  *dirfd.Parent
	name    string        // staging directory name inside parent
	dir     *dirfd.Parent // the open staging directory
	temp    string        // temp file name inside the staging directory
	fd      int           // the open temp file, -1 once closed
	tempSet bool          // the temp file exists
}

// run fills the temp file and publishes it; published reports whether the
// target now holds the content.
func (s *stage) run(ctx context.Context, req *Request) (published bool, err error) {
	// The staging directory was just made private; open it without
	// following anything, so a symlink swapped in under its name is refused.
	if s.dir, err = s.parent.OpenOwnDir(s.name); err != nil {
		return false, err
	}
	// Hold the staging directory's flock for the whole write, so Reclaim
	// in another process never takes a directory a live writer uses.
	if err := unix.Flock(s.dir.FD(), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false, &os.PathError{Op: "flock", Path: s.dir.Path(), Err: err}
	}
	if err := s.fill(req); err != nil {
		return false, err
	}
	if req.AfterStage != nil {
		req.AfterStage(s.dir.Path(), s.dir.Join(s.temp))
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := s.parent.CheckBeneath(); err != nil {
		return false, err
	}
	if err := s.dir.CheckBeneath(); err != nil {
		return false, err
	}
	if err := s.publish(req); err != nil {
		return false, err
	}
	return true, s.verify(req)
}

// fill creates the temp file exclusively, writes and fsyncs the content, and
// sets the final permission on the descriptor.
func (s *stage) fill(req *Request) error {
	if err := s.dir.CheckBeneath(); err != nil {
		return err
	}
	fd, err := unix.Openat(s.dir.FD(), s.temp,
		unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, tempPerm)
	if err != nil {
		return &os.PathError{Op: "open", Path: s.dir.Join(s.temp), Err: err}
	}
	s.fd, s.tempSet = fd, true
	if err := writeAll(fd, req.Content); err != nil {
		return &os.PathError{Op: "write", Path: s.dir.Join(s.temp), Err: err}
	}
	if err := unix.Fchmod(fd, uint32(req.Perm.Perm())); err != nil {
		return &os.PathError{Op: "chmod", Path: s.dir.Join(s.temp), Err: err}
	}
	if err := unix.Fsync(fd); err != nil {
		return &os.PathError{Op: "fsync", Path: s.dir.Join(s.temp), Err: err}
	}
	return nil
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

// publish renames or links the temp file to the target.
func (s *stage) publish(req *Request) error {
	target := s.parent.Join(req.Name)
	if req.Publication == Replace {
		if err := unix.Renameat(s.dir.FD(), s.temp, s.parent.FD(), req.Name); err != nil {
			return &os.LinkError{Op: "rename", Old: s.dir.Join(s.temp), New: target, Err: err}
		}
		s.tempSet = false
		return nil
	}
	link := req.link
	if link == nil {
		link = func(oldfd int, oldname string, newfd int, newname string) error {
			return unix.Linkat(oldfd, oldname, newfd, newname, 0)
		}
	}
	lerr := link(s.dir.FD(), s.temp, s.parent.FD(), req.Name)
	if lerr == nil {
		return nil
	}
	lerr = &os.LinkError{Op: "link", Old: s.dir.Join(s.temp), New: target, Err: lerr}
	return inspectCollision(req, lerr)
}

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

// cleanup removes the temp file (unless renamed away) and the staging
// directory. The temp descriptor stays open for the final fstat; Write
// closes it.
func (s *stage) cleanup() error {
	var errs []error
	if s.dir != nil {
		if s.tempSet {
			if err := unix.Unlinkat(s.dir.FD(), s.temp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, &os.PathError{Op: "unlink", Path: s.dir.Join(s.temp), Err: err})
			}
		}
		errs = append(errs, s.dir.Close())
	}
	if err := unix.Unlinkat(s.parent.FD(), s.name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, &os.PathError{Op: "rmdir", Path: s.parent.Join(s.name), Err: err})
	}
	return errors.Join(errs...)
}

func (s *stage) closeFile() {
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
}

// verify checks that the entry now at the target is the file this write
// published, so a write whose temp file was swapped by another process
// reports an error instead of another file's version.
func (s *stage) verify(req *Request) error {
	var mine unix.Stat_t
	if err := unix.Fstat(s.fd, &mine); err != nil {
		return &os.PathError{Op: "fstat", Path: s.parent.Join(req.Name), Err: err}
	}
	there, err := s.parent.Stat(req.Name, false)
	if err != nil {
		return err
	}
	if there.Dev != mine.Dev || there.Ino != mine.Ino {
		return &os.PathError{Op: "publish", Path: s.parent.Join(req.Name), Err: errReplaced}
	}
	return nil
}

// errReplaced says the published entry is not the file that was written.
var errReplaced = errors.New("the published entry was replaced by another process")

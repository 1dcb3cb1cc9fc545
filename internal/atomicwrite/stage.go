package atomicwrite

import (
	"errors"
	"os"
	"strconv"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// stage is the fallback where the filesystem refuses an unnamed file: one
// private staging directory beside the target and its temp file.
type stage struct {
	parent  *dirfd.Parent
	name    string        // staging directory name inside parent
	dir     *dirfd.Parent // the open staging directory; nil until opened
	temp    string        // temp file name inside the staging directory
	fd      int           // the open temp file (the writer closes it), -1 until made
	tempSet bool          // the temp file exists under its name
}

// newStage makes the staging directory, opens it, takes its flock and
// creates the temp file in it. It returns nil when the directory could not
// be made, else the stage to clean up, with the first error.
func newStage(p *dirfd.Parent, req *Request) (*stage, error) {
	staging, base := req.stagingName, req.Name
	if staging == "" {
		staging, base = newStagingName(req.Name)
	}
	if err := p.CheckBeneath(); err != nil {
		return nil, err
	}
	if err := unix.Mkdirat(p.FD(), staging, stagingPerm); err != nil {
		return nil, &os.PathError{Op: "mkdir", Path: p.Join(staging), Err: err}
	}
	s := &stage{parent: p, name: staging, temp: tempName(base), fd: -1}
	// The staging directory was just made private; open it without
	// following anything, so a symlink swapped in under its name is refused.
	var err error
	if s.dir, err = p.OpenOwnDir(staging); err != nil {
		return s, err
	}
	// Hold the staging directory's flock for the whole write, so Reclaim
	// in another process never takes a directory a live writer uses.
	if err := unix.Flock(s.dir.FD(), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return s, &os.PathError{Op: "flock", Path: s.dir.Path(), Err: err}
	}
	if err := s.dir.CheckBeneath(); err != nil {
		return s, err
	}
	// The temp file is made with a new file's mode: the private directory
	// keeps it from others meanwhile, and the kernel applies the umask and
	// the default ACL the staging directory inherited from the parent.
	fd, err := unix.Openat(s.dir.FD(), s.temp,
		unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, newFileMode)
	if err != nil {
		return s, &os.PathError{Op: "open", Path: s.dir.Join(s.temp), Err: err}
	}
	s.fd, s.tempSet = fd, true
	return s, nil
}

// newStagingName returns the staging directory name for a target named name,
// ".<base>.<pid>.<uuid>.tmpdir", and the base it uses: name, cut (on a code
// point boundary) so that the whole fits NAME_MAX, which lets a target with a
// name up to NAME_MAX be written.
func newStagingName(name string) (staging, base string) {
	suffix := "." + strconv.Itoa(os.Getpid()) + "." + uuid.NewString() + stagingSuffix
	base = cutBytes(name, nameMax-1-len(suffix))
	return "." + base + suffix, base
}

// tempName is the temp file's name inside a staging directory made for
// base: "<base>.tmp" (base is already short enough).
func tempName(base string) string { return base + tempSuffix }

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
		link = unix.Linkat
	}
	lerr := link(s.dir.FD(), s.temp, s.parent.FD(), req.Name, 0)
	if lerr == nil {
		return nil
	}
	return inspectCollision(req, &os.LinkError{Op: "link", Old: s.dir.Join(s.temp), New: target, Err: lerr})
}

// cleanup removes the temp file (unless renamed away) and the staging
// directory. The temp descriptor stays open for the final fstat; the writer
// closes it.
func (s *stage) cleanup() error {
	var errs []error
	if s.dir != nil {
		if s.tempSet {
			if err := unix.Unlinkat(s.dir.FD(), s.temp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, &os.PathError{Op: "unlink", Path: s.dir.Join(s.temp), Err: err})
			}
			s.tempSet = false
		}
		errs = append(errs, s.dir.Close())
	}
	if err := unix.Unlinkat(s.parent.FD(), s.name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, &os.PathError{Op: "rmdir", Path: s.parent.Join(s.name), Err: err})
	}
	return errors.Join(errs...)
}

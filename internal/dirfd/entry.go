package dirfd

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Mkdir makes the directory name inside p (mode 0777 before the umask) and
// fsyncs p, after checking that p is still beneath its handle's directory.
// An existing entry is EEXIST. Errors are *os.PathError.
func (p *Parent) Mkdir(name string) error {
	if err := p.CheckBeneath(); err != nil {
		return err
	}
	if err := unix.Mkdirat(p.fd, name, dirPerm); err != nil {
		return &os.PathError{Op: "mkdir", Path: p.Join(name), Err: err}
	}
	return p.Sync()
}

// OpenDirNoFollow opens the directory name inside p without following a
// symlink at name (ELOOP) and with p's confinement: the directory a removal
// descends into is the one that is there, never where a link points.
func (p *Parent) OpenDirNoFollow(name string) (*Parent, error) {
	fd, err := openat2(p.fd, name, &openHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW,
		Resolve: p.resolve | resolveNoSymlinks,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p.Join(name), Err: err}
	}
	return &Parent{fd: fd, resolve: p.resolve, path: p.Join(name), root: p.root}, nil
}

// Unlink removes the entry name inside p, a directory (which must be empty)
// when dir is set, after checking that p is still beneath its handle's
// directory. A symlink is removed itself, never followed. Errors are
// *os.PathError.
func (p *Parent) Unlink(name string, dir bool) error {
	if err := p.CheckBeneath(); err != nil {
		return err
	}
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(p.fd, name, flags); err != nil {
		return &os.PathError{Op: "remove", Path: p.Join(name), Err: err}
	}
	return nil
}

// Rename moves the entry name inside p to newName inside dest, after checking
// that both are still beneath their handles' directories. Without replace
// an entry at the destination is never replaced (renameat2
// RENAME_NOREPLACE: EEXIST). Only single names are given to the kernel, so
// no path is resolved; EXDEV from it means the two directories lie on
// different mounts, never an escape (CheckBeneath's EXDEV is the escape).
// Errors are *os.LinkError; a check's *os.PathError is returned as is.
func (p *Parent) Rename(name string, dest *Parent, newName string, replace bool) error {
	if err := p.CheckBeneath(); err != nil {
		return err
	}
	if err := dest.CheckBeneath(); err != nil {
		return err
	}
	flags := uint(renameNoReplace)
	if replace {
		flags = 0
	}
	for {
		err := renameat2(p.fd, name, dest.fd, newName, flags)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.LinkError{Op: "rename", Old: p.Join(name), New: dest.Join(newName), Err: err}
		}
		return nil
	}
}

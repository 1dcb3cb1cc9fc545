package undo

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/journal"
)

// restorer puts entries back on disk, each parent resolved from "/"
// without following a symlink (openParent), each mutation addressing one
// name inside it, durable (the file fsynced before it publishes, the
// directory after).
type restorer struct {
	ctx     context.Context
	content func(hash string) ([]byte, error)
	// dirs are the directories restored, whose mode and modification
	// time are set last (entries made inside change the time, and a
	// read-only mode would refuse them), deepest first.
	dirs []journal.Node
	// notes say what could not be restored exactly (an owner this
	// process may not give).
	notes []string
	// touched is set once an entry on disk changed: a failure after it
	// may have left part of the restore on disk.
	touched bool
	// reclaimed holds the [dev, ino] of each directory already cleared of
	// the temporary names a killed writer (an earlier undo) left there.
	reclaimed map[[2]uint64]bool
}

// reclaim removes, the first time the restore writes into par, what
// writers killed mid-write left there (atomicwrite.Reclaim: only a dead
// process's, under its flock), so an undo killed part-way and run again
// leaves no temporary name behind.
func (r *restorer) reclaim(par *dirfd.Parent) {
	key, err := par.Identity()
	if err != nil || r.reclaimed[key] {
		return
	}
	if r.reclaimed == nil {
		r.reclaimed = map[[2]uint64]bool{}
	}
	r.reclaimed[key] = true
	_, _ = atomicwrite.Reclaim(par) // best effort: a name that stays is not ours to remove
}

// remove removes the entry at p: a directory must be empty.
func (r *restorer) remove(p string) error {
	par, base, err := openParent(p)
	if err != nil {
		return err
	}
	defer par.Close() //nolint:errcheck // the sync reports
	st, err := par.Stat(base, false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := par.Unlink(base, dirfd.IsDir(&st)); err != nil {
		return err
	}
	r.touched = true
	return par.Sync()
}

// moveBack renames the entry at from to to, replacing what is there when
// replace is set (else refusing with EEXIST), and fsyncs both directories.
func (r *restorer) moveBack(from, to string, replace bool) error {
	src, sname, err := openParent(from)
	if err != nil {
		return err
	}
	defer src.Close() //nolint:errcheck // the sync reports
	dst, dname, err := openParent(to)
	if err != nil {
		return err
	}
	defer dst.Close() //nolint:errcheck // the sync reports
	if err := src.Rename(sname, dst, dname, replace); err != nil {
		return err
	}
	r.touched = true
	if err := dst.Sync(); err != nil {
		return err
	}
	return src.Sync()
}

// put restores the node n at n.Path: a directory is made when missing, a
// file's kept content published atomically over what is there, a symlink
// made beside and renamed over it. The owner, extended attributes, mode
// and modification time follow (a directory's mode and time in finish).
func (r *restorer) put(n journal.Node) error {
	par, base, err := openParent(n.Path)
	if err != nil {
		return err
	}
	defer par.Close() //nolint:errcheck // the sync reports
	r.reclaim(par)
	switch n.Type {
	case journal.Special:
		r.notes = append(r.notes, n.Path+": a special file (FIFO, socket or device) is not restored")
		return nil
	case journal.Dir:
		return r.putDir(par, base, n)
	case journal.File:
		if inPlace(par, base, n) {
			// Its content and metadata are the prior ones already; its
			// modification time may not be (an undo killed between
			// writing it and setting its time): set it, as putFile would.
			return setTime(par, base, n)
		}
		return r.putFile(par, base, n)
	case journal.Symlink:
		if inPlace(par, base, n) {
			return setTime(par, base, n)
		}
		return r.putSymlink(par, base, n)
	}
	return &os.PathError{Op: "restore", Path: n.Path, Err: unix.EINVAL}
}

// inPlace reports whether the entry base inside par is n already (a file
// by size, mode, owner, content and extended attributes; a symlink by
// target): a change left part-way (a recursive delete killed mid-tree)
// left it, and the undo leaves it alone. Anything unreadable is not.
func inPlace(par *dirfd.Parent, base string, n journal.Node) bool {
	st, err := par.Stat(base, false)
	if err != nil {
		return false
	}
	switch n.Type {
	case journal.File:
		if !dirfd.IsRegular(&st) || st.Size != n.Size || dirfd.Perm(&st) != n.Mode || st.Uid != n.UID || st.Gid != n.GID {
			return false
		}
	case journal.Symlink:
		if !dirfd.IsSymlink(&st) {
			return false
		}
	}
	have, err := readNode(par, base, n.Path)
	if err != nil || have == nil {
		return false
	}
	return differs(&n, have) == "" && maps.EqualFunc(n.Xattrs, have.Xattrs, bytes.Equal)
}

func (r *restorer) putDir(par *dirfd.Parent, base string, n journal.Node) error {
	st, err := par.Stat(base, false)
	switch {
	case errors.Is(err, unix.ENOENT):
		if err := par.Mkdir(base); err != nil {
			return err
		}
		r.touched = true
	case err != nil:
		return err
	case !dirfd.IsDir(&st):
		if err := par.Unlink(base, false); err != nil {
			return err
		}
		r.touched = true
		if err := par.Mkdir(base); err != nil {
			return err
		}
	}
	fd, err := par.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd) //nolint:errcheck // the fsync reports
	if err := r.owner(fd, n); err != nil {
		return err
	}
	if err := setXattrs(fd, n); err != nil {
		return err
	}
	r.dirs = append(r.dirs, n)
	return nil
}

func (r *restorer) putFile(par *dirfd.Parent, base string, n journal.Node) error {
	content, err := r.content(n.Hash)
	if err != nil {
		return err
	}
	if _, err := atomicwrite.Write(r.ctx, atomicwrite.Request{
		Parent: par, Name: base, Content: string(content), Publication: atomicwrite.Replace,
	}); err != nil {
		return err
	}
	r.touched = true
	fd, err := par.Open(base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd) //nolint:errcheck // the fsync reports
	if err := r.owner(fd, n); err != nil {
		return err
	}
	if err := setXattrs(fd, n); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, n.Mode); err != nil {
		return &os.PathError{Op: "chmod", Path: n.Path, Err: err}
	}
	if err := setTime(par, base, n); err != nil {
		return err
	}
	if err := unix.Fsync(fd); err != nil {
		return &os.PathError{Op: "fsync", Path: n.Path, Err: err}
	}
	return nil
}

func (r *restorer) putSymlink(par *dirfd.Parent, base string, n journal.Node) error {
	tmp := "." + truncName(base, 200) + "." + uuid.NewString()[:8] + ".undo"
	if err := unix.Symlinkat(n.Link, par.FD(), tmp); err != nil {
		return &os.PathError{Op: "symlink", Path: par.Join(tmp), Err: err}
	}
	if err := par.Rename(tmp, par, base, true); err != nil {
		_ = unix.Unlinkat(par.FD(), tmp, 0)
		return err
	}
	r.touched = true
	if err := unix.Fchownat(par.FD(), base, int(n.UID), int(n.GID), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if !errors.Is(err, unix.EPERM) {
			return &os.PathError{Op: "lchown", Path: n.Path, Err: err}
		}
		r.notes = append(r.notes, n.Path+": owner "+owner(n)+" not restored (this process may not give it)")
	}
	if err := setTime(par, base, n); err != nil {
		return err
	}
	return par.Sync()
}

// finish sets each restored directory's mode and modification time,
// deepest first, and fsyncs it.
func (r *restorer) finish() error {
	for i := len(r.dirs) - 1; i >= 0; i-- {
		n := r.dirs[i]
		par, base, err := openParent(n.Path)
		if err != nil {
			return err
		}
		err = finishDir(par, base, n)
		_ = par.Close()
		if err != nil {
			return err
		}
	}
	r.dirs = nil
	return nil
}

func finishDir(par *dirfd.Parent, base string, n journal.Node) error {
	fd, err := par.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd) //nolint:errcheck // the fsync reports
	if err := unix.Fchmod(fd, n.Mode); err != nil {
		return &os.PathError{Op: "chmod", Path: n.Path, Err: err}
	}
	if err := setTime(par, base, n); err != nil {
		return err
	}
	if err := unix.Fsync(fd); err != nil {
		return &os.PathError{Op: "fsync", Path: n.Path, Err: err}
	}
	return par.Sync()
}

// owner gives the entry behind fd n's owner and group when it has others.
// A refusal (an unprivileged process giving a file away) is a note, not an
// error: the content and the rest are still restored.
func (r *restorer) owner(fd int, n journal.Node) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: n.Path, Err: err}
	}
	if st.Uid == n.UID && st.Gid == n.GID {
		return nil
	}
	err := unix.Fchown(fd, int(n.UID), int(n.GID))
	if errors.Is(err, unix.EPERM) {
		r.notes = append(r.notes, n.Path+": owner "+owner(n)+" not restored (this process may not give it)")
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "chown", Path: n.Path, Err: err}
	}
	return nil
}

func owner(n journal.Node) string {
	return strconv.FormatUint(uint64(n.UID), 10) + ":" + strconv.FormatUint(uint64(n.GID), 10)
}

// setXattrs makes the extended attributes of the entry behind fd those n
// records: each one set, any other removed except in the security
// namespace, which the kernel labels.
func setXattrs(fd int, n journal.Node) error {
	have, err := listXattrs(fd)
	if err != nil {
		return &os.PathError{Op: "listxattr", Path: n.Path, Err: err}
	}
	for _, name := range have {
		if _, keep := n.Xattrs[name]; keep || strings.HasPrefix(name, "security.") {
			continue
		}
		if err := unix.Fremovexattr(fd, name); err != nil && !errors.Is(err, unix.ENODATA) {
			return &os.PathError{Op: "removexattr " + name, Path: n.Path, Err: err}
		}
	}
	names := make([]string, 0, len(n.Xattrs))
	for name := range n.Xattrs {
		if !strings.HasPrefix(name, "security.") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if err := unix.Fsetxattr(fd, name, n.Xattrs[name], 0); err != nil {
			return &os.PathError{Op: "setxattr " + name, Path: n.Path, Err: err}
		}
	}
	return nil
}

// listXattrs returns the names of the extended attributes of fd; none
// where the filesystem has none.
func listXattrs(fd int) ([]string, error) {
	return dirfd.ListXattrs(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) })
}

// setTime sets the modification time of the entry base inside par to n's,
// without following a symlink, leaving its access time.
func setTime(par *dirfd.Parent, base string, n journal.Node) error {
	if n.MTime == 0 {
		return nil
	}
	ts := []unix.Timespec{{Nsec: utimeOmit}, unix.NsecToTimespec(n.MTime)}
	if err := unix.UtimesNanoAt(par.FD(), base, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimes", Path: n.Path, Err: err}
	}
	return nil
}

// truncName cuts name to at most n bytes, for a temporary name beside it.
func truncName(name string, n int) string {
	if len(name) <= n {
		return name
	}
	return name[:n]
}

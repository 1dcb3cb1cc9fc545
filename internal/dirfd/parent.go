package dirfd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dirPerm is the mode missing parent directories are created with, before the
// process umask, as mkdir -p does.
const dirPerm = 0o777

// Parent is an open directory beneath a Dir. Mutations address its entries by
// single name, so no path is resolved when they run.
type Parent struct {
	fd      int
	resolve uint64
	path    string
	root    string    // a confined handle's directory; "" for the host
	id      [2]uint64 // device and inode, once Identity has read them
	idRead  bool
}

// OpenParent opens the directory rel beneath d for reading, fsync and *at
// calls. With create, missing directories are made one component at a time,
// each inside a descriptor already confined beneath d, and the directory that
// gained an entry is fsynced; created reports how many were made. Errors are
// *os.PathError; an escape satisfies IsEscape.
func (d *Dir) OpenParent(rel string, create bool) (p *Parent, created int, err error) {
	fd, err := openat2(d.fd, d.name(rel), &openHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY,
		Resolve: d.resolve,
	})
	if err == nil {
		return &Parent{fd: fd, resolve: d.resolve, path: d.full(rel), root: d.confinedPath()}, 0, nil
	}
	if !create || !errors.Is(err, unix.ENOENT) || rel == "" || rel == "." {
		return nil, 0, &os.PathError{Op: "open", Path: d.full(rel), Err: err}
	}
	// Split without cleaning: "link/.." must go up from where the link
	// leads, as the kernel resolves it, not collapse lexically.
	dir, base := path.Split(rel)
	dir = strings.TrimRight(dir, "/")
	if dir == "" {
		dir = "."
	}
	up, created, err := d.OpenParent(dir, true)
	if err != nil {
		return nil, created, err
	}
	defer func() { _ = up.Close() }()
	child, made, err := up.mkdirChild(base)
	if made {
		created++
	}
	return child, created, err
}

// mkdirChild makes the directory name inside p if it is missing, fsyncs p when
// it did, and opens it.
func (p *Parent) mkdirChild(name string) (child *Parent, made bool, err error) {
	if err := p.CheckBeneath(); err != nil {
		return nil, false, err
	}
	switch err := unix.Mkdirat(p.fd, name, dirPerm); {
	case err == nil:
		made = true
		if err := p.Sync(); err != nil {
			return nil, made, err
		}
	case errors.Is(err, unix.EEXIST):
	case errors.Is(err, unix.EACCES):
		// A Landlock domain refuses a directory moved out of its root
		// with EACCES: such a refusal is the escape it stopped.
		if escaped := p.CheckBeneath(); escaped != nil {
			return nil, false, escaped
		}
		return nil, false, &os.PathError{Op: "mkdir", Path: p.Join(name), Err: err}
	default:
		return nil, false, &os.PathError{Op: "mkdir", Path: p.Join(name), Err: err}
	}
	child, err = p.OpenDir(name)
	return child, made, err
}

// OpenDir opens the directory name inside p with p's confinement.
func (p *Parent) OpenDir(name string) (*Parent, error) {
	fd, err := openat2(p.fd, name, &openHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY,
		Resolve: p.resolve,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p.Join(name), Err: err}
	}
	return &Parent{fd: fd, resolve: p.resolve, path: p.Join(name), root: p.root}, nil
}

// OpenOwnDir opens the directory name inside p without following a symlink
// at name (or anywhere: name is a single component) and checks that it is a
// private directory (no group or other permission bits) owned by this
// process's effective user: the shape of a staging directory this process,
// or a writer of the same user, made. Anything else is refused (ELOOP for a
// symlink, ENOTDIR, EPERM).
func (p *Parent) OpenOwnDir(name string) (*Parent, error) {
	fd, err := openat2(p.fd, name, &openHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW,
		Resolve: p.resolve | resolveNoSymlinks,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p.Join(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: p.Join(name), Err: err}
	}
	if !IsDir(&st) || st.Mode&0o077 != 0 || int(st.Uid) != os.Geteuid() {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: p.Join(name), Err: unix.EPERM}
	}
	return &Parent{fd: fd, resolve: p.resolve, path: p.Join(name), root: p.root}, nil
}

// Close releases the descriptor.
func (p *Parent) Close() error {
	if p.fd < 0 {
		return nil
	}
	err := unix.Close(p.fd)
	p.fd = -1
	return err
}

// FD returns the directory descriptor for *at calls on single names.
func (p *Parent) FD() int { return p.fd }

// Identity returns the directory's device and inode numbers, which name it
// whatever path reaches it: read with fstat on the first call and kept, since
// an open descriptor never changes directory. Errors are *os.PathError.
func (p *Parent) Identity() ([2]uint64, error) {
	if !p.idRead {
		var st unix.Stat_t
		if err := unix.Fstat(p.fd, &st); err != nil {
			return [2]uint64{}, &os.PathError{Op: "fstat", Path: p.path, Err: err}
		}
		p.id, p.idRead = [2]uint64{uint64(st.Dev), st.Ino}, true //nolint:unconvert // Dev is int32 on darwin
	}
	return p.id, nil
}

// Path returns the absolute path of the directory, for messages.
func (p *Parent) Path() string { return p.path }

// Join returns the absolute path of the entry name, for messages.
func (p *Parent) Join(name string) string { return path.Join(p.path, name) }

// Sync fsyncs the directory, making entries added or removed in it durable.
func (p *Parent) Sync() error {
	if err := unix.Fsync(p.fd); err != nil {
		return &os.PathError{Op: "fsync", Path: p.path, Err: err}
	}
	return nil
}

// Stat returns the metadata of the entry name, following a final symlink
// when follow is set. Stat only reads metadata; it is not confined.
func (p *Parent) Stat(name string, follow bool) (unix.Stat_t, error) {
	var st unix.Stat_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	for {
		err := unix.Fstatat(p.fd, name, &st, flags)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return st, &os.PathError{Op: "stat", Path: p.Join(name), Err: err}
		}
		return st, nil
	}
}

// OpenRead opens the entry name for reading with p's confinement; see
// OpenRead.
func (p *Parent) OpenRead(name string) (*File, unix.Stat_t, error) {
	return openRead(p.fd, name, p.resolve, p.Join(name))
}

// Names returns the names of the directory's entries in the order the
// filesystem reports them, without "." and "..". Each call reads the
// directory afresh (through a new open of ".", which has its own offset).
func (p *Parent) Names() ([]string, error) {
	fd, err := unix.Openat(p.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), p.path)
	defer f.Close() //nolint:errcheck // read-only descriptor
	return f.Readdirnames(-1)
}

// direntBufBytes is the getdents buffer of EachName: about 2,000 entries of
// a typical name length per call.
const direntBufBytes = 64 << 10

// EachName calls fn with the name of each of the directory's entries, in the
// order the filesystem reports them, without "." and "..". The name's bytes
// are reused after fn returns: copy what you keep. Names are read in batches
// into one buffer, so memory does not grow with the directory. Each call
// reads the directory afresh (through a new open of "."); it stops at fn's
// first error and returns it. Other errors are *os.PathError.
func (p *Parent) EachName(fn func(name []byte) error) error {
	fd, err := unix.Openat(p.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: p.path, Err: err}
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	buf := make([]byte, direntBufBytes)
	for {
		n, err := getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "getdents", Path: p.path, Err: err}
		}
		if n <= 0 {
			return nil
		}
		if err := eachDirent(buf[:n], fn); err != nil {
			return err
		}
	}
}

// eachDirent calls fn with the name of each linux_dirent64 record in buf
// (ino, off, reclen, type, then the NUL-terminated name), skipping ".",
// ".." and records with inode 0 (deleted entries on some filesystems).
func eachDirent(buf []byte, fn func(name []byte) error) error {
	const nameOff = 19 // 8 (ino) + 8 (off) + 2 (reclen) + 1 (type)
	for len(buf) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < nameOff || reclen > len(buf) {
			return &os.PathError{Op: "getdents", Err: unix.EIO}
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		if binary.NativeEndian.Uint64(rec[0:8]) == 0 {
			continue
		}
		name := rec[nameOff:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if string(name) == "." || string(name) == ".." {
			continue
		}
		if err := fn(name); err != nil {
			return err
		}
	}
	return nil
}

// RemoveCreated undoes OpenParent(rel, true) that reported created > 0: it
// removes the deepest created components of rel, deepest first, each only if
// still empty (rmdir refuses otherwise), through the same confinement. It
// stops at the first failure and returns it.
func (d *Dir) RemoveCreated(rel string, created int) error {
	for range created {
		dir, base := path.Split(rel)
		dir = strings.TrimRight(dir, "/")
		if dir == "" {
			dir = "."
		}
		p, _, err := d.OpenParent(dir, false)
		if err != nil {
			return err
		}
		err = unix.Unlinkat(p.fd, base, unix.AT_REMOVEDIR)
		_ = p.Close()
		if err != nil {
			return &os.PathError{Op: "rmdir", Path: d.full(rel), Err: err}
		}
		rel = dir
	}
	return nil
}

// CheckBeneath reports, for a parent opened through a confined handle,
// whether the directory is still beneath the handle's directory now: a
// descriptor follows its directory when another process renames it, so a
// directory moved out of the root after it was opened would otherwise carry
// later mutations with it. It reads the kernel's current path of the
// descriptor and fails with EXDEV (see IsEscape) when it lies elsewhere. For
// the host handle it always succeeds. Call it right before each mutation; it
// narrows the window of such a move to the gap between check and syscall.
func (p *Parent) CheckBeneath() error {
	if p.root == "" {
		return nil
	}
	now, err := p.Where()
	if err != nil {
		return err
	}
	if Beneath(p.root, now) {
		return nil
	}
	return &os.PathError{Op: "check", Path: p.path, Err: unix.EXDEV}
}

// Open opens the entry name inside p with p's confinement, the open flags
// flags (O_CLOEXEC is added) and, when flags create a file, the mode mode
// (before the umask). name "." opens p itself, which is how an unnamed file
// (O_TMPFILE) is made in p. It returns the raw descriptor; errors are
// *os.PathError and an escape satisfies IsEscape.
func (p *Parent) Open(name string, flags, mode uint64) (int, error) {
	fd, err := openat2(p.fd, name, &openHow{Flags: flags, Mode: mode, Resolve: p.resolve})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: p.Join(name), Err: err}
	}
	return fd, nil
}

// ChownCreated gives the directories that OpenParent(rel, true) reported as
// created (the deepest created components of rel) the owner uid and group
// gid, through the same confinement, never following a symlink. It stops at
// the first failure and returns it.
func (d *Dir) ChownCreated(rel string, created, uid, gid int) error {
	for range created {
		dir, base := path.Split(rel)
		dir = strings.TrimRight(dir, "/")
		if dir == "" {
			dir = "."
		}
		p, _, err := d.OpenParent(dir, false)
		if err != nil {
			return err
		}
		err = unix.Fchownat(p.fd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		_ = p.Close()
		if err != nil {
			return &os.PathError{Op: "chown", Path: d.full(rel), Err: err}
		}
		rel = dir
	}
	return nil
}

// Where returns the kernel's current absolute path of the directory (from
// /proc/self/fd), which follows it when it is renamed: the directory a
// mutation addresses, whatever spelling opened it. Errors: *os.PathError.
func (p *Parent) Where() (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(p.fd), buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: p.path, Err: err}
	}
	return string(buf[:n]), nil
}

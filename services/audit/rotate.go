package audit

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// prepare makes l.f the file the next write of size bytes belongs in: the
// file now at Path (another process may have rotated it, or it was
// removed), rotated first when the write would take it past MaxBytes.
// Rotation runs under flock(2) on Path+".lock" (created 0600 the first
// time it is needed), and the file at Path is
// looked at again once the lock is held: the other process may have
// rotated it meanwhile.
func (l *Log) prepare(size int64) error {
	if !l.moved() && !l.full(size) {
		return nil
	}
	if l.lock == nil {
		lock, err := os.OpenFile(l.opts.Path+".lock", os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		l.lock = lock
	}
	if err := flock(l.lock, unix.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = flock(l.lock, unix.LOCK_UN) }()
	if l.moved() {
		if err := l.reopen(); err != nil {
			return err
		}
	}
	if !l.full(size) {
		return nil
	}
	return l.rotate()
}

// moved reports whether Path no longer names the open file.
func (l *Log) moved() bool {
	open, err := l.f.Stat()
	if err != nil {
		return false // nothing to compare: keep the file we have
	}
	named, err := os.Stat(l.opts.Path)
	return err != nil || !os.SameFile(open, named)
}

// full reports whether writing size more bytes would take the open file
// past MaxBytes. An empty file takes any write whole; a file that is not
// regular (a pipe, a device) never rotates.
func (l *Log) full(size int64) bool {
	fi, err := l.f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return false
	}
	return fi.Size()+size > l.opts.MaxBytes
}

// reopen replaces l.f by the file now at Path (created when missing).
func (l *Log) reopen() error {
	f, err := openFile(l.opts.Path)
	if err != nil {
		return err
	}
	_ = l.f.Close()
	l.f = f
	syncDir(l.opts.Path)
	return nil
}

// rotate shifts Path.(Keep-1) .. Path.1 up by one (Path.Keep is replaced:
// the oldest goes), renames Path to Path.1 and opens a fresh Path.
func (l *Log) rotate() error {
	for i := l.opts.Keep - 1; i >= 1; i-- {
		err := os.Rename(rotated(l.opts.Path, i), rotated(l.opts.Path, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(l.opts.Path, rotated(l.opts.Path, 1)); err != nil {
		return err
	}
	return l.reopen()
}

// rotated returns the name of the i-th rotated file of path (1 the newest).
func rotated(path string, i int) string {
	return path + "." + strconv.Itoa(i)
}

// flock applies how (LOCK_EX, LOCK_UN) to f, retrying an interrupted wait.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

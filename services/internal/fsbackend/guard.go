package fsbackend

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/fs"
)

// Limits of the cross-process guard.
const (
	// guardRetries bounds how often the guard re-opens a target that was
	// replaced while it waited for the lock.
	guardRetries = 100
	// guardPollFirst and guardPollLongest bound the pause between two attempts
	// at a held lock (doubling from the first to the second); flock cannot
	// be interrupted, so waiting polls and watches the context.
	guardPollFirst   = 100 * time.Microsecond
	guardPollLongest = 10 * time.Millisecond
	// guardWait bounds the whole wait: a harness writer holds the lock for
	// one publication (milliseconds); a lock held this long belongs to
	// something else, and the call fails rather than hang.
	guardWait = 30 * time.Second
)

// errGone says the target disappeared while the guard waited.
var errGone = errors.New("the target no longer exists")

// guard opens the regular file now at m's target and takes an exclusive
// flock on it, so that the version check, the read and the publication of a
// guarded write or an edit form one critical section across processes (the
// in-process lock table alone excludes only this process). A publication
// replaces the inode, so a writer that waited on the old inode sees, once it
// has the lock, that the path names another file: it then locks that one
// instead, and finds its version changed. The returned file is open for
// reading; closing it releases the lock. Each file opened is shown to admit
// (the fence's read decision, see Backend.admitRead) before it is locked or
// read. Errors: errGone (wrapping ENOENT) when the target is absent; a
// non-regular target is reported by the caller from the returned Stat_t;
// admit's refusal as it is; other errors are *os.PathError.
func guard(ctx context.Context, m *mutation, admit func(*dirfd.File, *unix.Stat_t) error) (*dirfd.File, unix.Stat_t, error) {
	for range guardRetries {
		file, st, err := m.parent.OpenRead(m.name)
		if isAbsent(err) {
			return nil, st, errors.Join(errGone, err)
		}
		if err != nil {
			return nil, st, err
		}
		if !dirfd.IsRegular(&st) {
			return file, st, nil // the caller refuses it; nothing to lock
		}
		if err := admit(file, &st); err != nil {
			_ = file.Close()
			return nil, st, err
		}
		if err := lockFile(ctx, file); err != nil {
			_ = file.Close()
			return nil, st, err
		}
		// Holding the lock, the path must still name this inode, and the
		// version must be read now, not before the wait.
		now, err := m.parent.Stat(m.name, true)
		if err == nil && now.Dev == st.Dev && now.Ino == st.Ino {
			if err := unix.Fstat(file.Fd(), &st); err != nil {
				_ = file.Close()
				return nil, st, &os.PathError{Op: "fstat", Path: m.parent.Join(m.name), Err: err}
			}
			return file, st, nil
		}
		_ = file.Close()
		if isAbsent(err) {
			return nil, st, errors.Join(errGone, err)
		}
	}
	return nil, unix.Stat_t{}, &os.PathError{Op: "lock", Path: m.parent.Join(m.name), Err: unix.EAGAIN}
}

// admitRead returns the decision of the fence's Read on a file a mutation
// of target (op) opened to read: the old file a write scans for its
// conventions and diff, the file an edit reads whole.
func (f *Backend) admitRead(target fs.Target, op string) func(*dirfd.File, *unix.Stat_t) error {
	return func(file *dirfd.File, st *unix.Stat_t) error {
		return f.fence.Read(target, op, file.Fd(), st, false)
	}
}

// lockFile takes an exclusive flock on file, polling while another holder
// has it, until ctx ends.
func lockFile(ctx context.Context, file *dirfd.File) error {
	fd := file.Fd()
	deadline := time.Now().Add(guardWait)
	for pause := guardPollFirst; ; pause = min(2*pause, guardPollLongest) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return &os.PathError{Op: "flock", Path: file.Name(), Err: err}
		}
		if time.Now().After(deadline) {
			return &os.PathError{Op: "flock", Path: file.Name(), Err: errLockHeld}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

// errLockHeld says another holder kept the file's lock past guardWait.
var errLockHeld = errors.New("another process has held the file's lock for too long")

// fresh reports whether the file locked by guard, at st, is still what the
// session saw: at version v, or, when fp is known, of fp's size with fp's
// content hash, so a metadata-only change (a touch, a copy away and back) is
// not stale (spec difference 14). The text is hashed only when the version
// differs and the size matches; a file that is not text is not fresh. Errors:
// an ended context, or a failed read (*os.PathError).
func fresh(ctx context.Context, file *dirfd.File, st *unix.Stat_t, v fs.Version, fp fs.Fingerprint) (bool, error) {
	if version(st) == v {
		return true, nil
	}
	if !fp.Known() || st.Size != fp.Size {
		return false, nil
	}
	hash, err := hashText(ctx, io.NewSectionReader(file, 0, math.MaxInt64))
	return err == nil && hash == fp.Hash, err
}

// hashText streams r through the decoder of a read and returns the hash of
// its text (see textfile.TextHash), or "" when it is not text. Errors: an
// ended context, or r's error.
func hashText(ctx context.Context, r io.Reader) (fs.ContentHash, error) {
	var dec textfile.Decoder
	h := textfile.NewTextHash()
	buf := make([]byte, readChunkBytes)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, rerr := r.Read(buf)
		chunk, err := dec.Feed(buf[:n])
		if err == nil && errors.Is(rerr, io.EOF) {
			err = dec.Close()
		}
		if err != nil {
			return "", nil //nolint:nilerr // not text: no hash, not an error
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return "", rerr
		}
		h.Write(chunk)
		if rerr != nil {
			return fs.ContentHash(h.Sum()), nil
		}
	}
}

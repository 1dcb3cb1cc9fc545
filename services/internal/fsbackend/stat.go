package fsbackend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/fs"
)

// Stat follows symlinks and returns nil, nil when the target is absent or a
// parent segment is not a directory (A-07, L-18, L-24). The context is
// checked before and after the metadata call (L-20, L-23). Errors:
// CodeAborted, CodePermissionDenied, CodeIOError, and the fence's refusal
// of the metadata of what lies inside a denied directory (CodeReadDenied).
func (f *Backend) Stat(ctx context.Context, target fs.Target) (*fs.Info, error) {
	if err := checkCtx(ctx, "stat"); err != nil {
		return nil, err
	}
	st, refusal, err := f.peek(target, "stat", string(target.Key), true, true)
	if err := checkCtx(ctx, "stat"); err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	if isAbsent(err) {
		return nil, nil
	}
	if err != nil {
		return nil, osErr("stat", "stat", target.DisplayPath, err)
	}
	return &fs.Info{Type: fileType(&st), Size: st.Size, Version: version(&st)}, nil
}

// peek returns the metadata of the absolute path p (of target), following a
// final symlink when follow, read with fstat on a descriptor opened with
// O_PATH (no data is read; a FIFO does not block), once the fence's Read
// admits that descriptor (entry: only its own metadata, so the metadata of
// what lies inside a denied directory is refused like its contents).
// It returns the fence's refusal, to be returned as it is, or the open's
// error (*os.PathError). The open runs with the backend's filesystem
// identity (Settings.NewOwner).
func (f *Backend) peek(target fs.Target, op, p string, follow, entry bool) (st unix.Stat_t, refusal, err error) {
	flags := dirfd.OPath | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	var fd int
	err = f.as.Do(func() error {
		return retryEINTR(func() (err error) {
			fd, err = unix.Open(p, flags, 0)
			return err
		})
	})
	if err != nil {
		return st, nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd) //nolint:errcheck // O_PATH descriptor
	if err := unix.Fstat(fd, &st); err != nil {
		return st, nil, &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	return st, f.fence.Read(target, op, fd, &st, entry), nil
}

// Lstat resolves path like Resolve but leaves a final symlink unfollowed; it
// returns nil, nil when the path is absent (A-07, L-21..L-26). Errors as
// Resolve and Stat.
func (f *Backend) Lstat(ctx context.Context, path string, opts fs.ResolveOptions) (*fs.Info, error) {
	if err := checkCtx(ctx, "lstat"); err != nil {
		return nil, err
	}
	dp, err := f.displayPath(path, opts)
	if err != nil {
		return nil, err
	}
	p := dp
	if dir := filepath.Dir(dp); dir != dp {
		var parent string
		err := f.as.Do(func() (err error) {
			parent, err = realpath.Canonical(dir)
			return err
		})
		if isAbsent(err) {
			return nil, nil
		}
		if err != nil {
			return nil, osErr("lstat", "stat", dp, err)
		}
		p = filepath.Join(parent, filepath.Base(dp))
	}
	st, refusal, err := f.peek(fs.Target{Key: fs.TargetKey(p), DisplayPath: dp}, "lstat", p, false, true)
	if err := checkCtx(ctx, "lstat"); err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	if isAbsent(err) {
		return nil, nil
	}
	if err != nil {
		return nil, osErr("lstat", "stat", dp, err)
	}
	return &fs.Info{Type: fileType(&st), Size: st.Size, Version: version(&st)}, nil
}

// fileType classifies a stat result.
func fileType(st *unix.Stat_t) fs.FileType {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return fs.TypeFile
	case unix.S_IFDIR:
		return fs.TypeDirectory
	case unix.S_IFLNK:
		return fs.TypeSymlink
	default:
		return fs.TypeOther
	}
}

// version is the token "dev:ino:size:mtimeNs:ctimeNs" (spec section 0). The
// ctime cannot be set from user space, so a same-size rewrite with restored
// mtime still changes the token (L-19).
func version(st *unix.Stat_t) fs.Version {
	b := make([]byte, 0, 80)
	b = strconv.AppendUint(b, dirfd.Dev(st), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, st.Ino, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, st.Size, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, st.Mtim.Nano(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, st.Ctim.Nano(), 10)
	return fs.Version(b)
}

// retryEINTR runs call until it stops failing with EINTR.
func retryEINTR(call func() error) error {
	for {
		err := call()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

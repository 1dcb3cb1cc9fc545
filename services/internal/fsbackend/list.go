package fsbackend

import (
	"context"
	"errors"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/realpath"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
)

// listCheckEvery is how many children ListDir stats between context checks.
const listCheckEvery = 64

// ListDir returns the entries of the directory target, sorted by byte-wise
// name comparison (spec decision 3), with metadata but never contents
// (A-06, L-42..L-52). Children resolve from the directory's canonical path
// captured in target.Key (L-46). A child that is a symlink reports its
// destination's type and canonical key; a dangling one is TypeOther without
// version or size. Errors: CodeNotFound, CodeNotDirectory,
// CodePermissionDenied (also from one child), CodeIOError (a loop, also from
// one child, with that child's display path), CodeAborted.
func (f *Backend) ListDir(ctx context.Context, target fs.Target) ([]fs.DirEntry, error) {
	if err := checkCtx(ctx, "list"); err != nil {
		return nil, err
	}
	dp := target.DisplayPath
	rel, _ := f.host.Rel(string(target.Key))
	dir, _, err := f.host.OpenParent(rel, false)
	if errors.Is(err, unix.ENOTDIR) {
		return nil, newErr(fs.CodeNotDirectory, "list", dp, err, "cannot list %q: not a directory", dp)
	}
	if err != nil {
		return nil, osErr("list", "list", dp, err)
	}
	defer dir.Close() //nolint:errcheck // read-only descriptor
	names, err := dir.Names()
	if err != nil {
		return nil, osErr("list", "list", dp, err)
	}
	slices.Sort(names)
	entries := make([]fs.DirEntry, 0, len(names))
	for i, name := range names {
		if i%listCheckEvery == 0 {
			if err := checkCtx(ctx, "list"); err != nil {
				return nil, err
			}
		}
		entry, err := child(dir, string(target.Key), dp, name)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry)
	}
	if err := checkCtx(ctx, "list"); err != nil {
		return nil, err
	}
	return entries, nil
}

// child describes one entry of dir, whose canonical path is key.
func child(dir *dirfd.Parent, key, dp, name string) (fs.DirEntry, error) {
	e := fs.DirEntry{
		Name:   name,
		Type:   fs.TypeOther,
		Target: fs.Target{Key: fs.TargetKey(filepath.Join(key, name)), DisplayPath: filepath.Join(dp, name)},
	}
	st, err := dir.Stat(name, false)
	if err == nil && dirfd.IsSymlink(&st) {
		st, err = dir.Stat(name, true)
		if err == nil {
			var canonical string
			if canonical, err = realpath.Canonical(string(e.Target.Key)); err == nil {
				e.Target.Key = fs.TargetKey(canonical)
			}
		}
	}
	switch {
	case isAbsent(err):
		// A dangling link, or an entry removed since the listing: no
		// metadata (L-44).
		return e, nil
	case err != nil:
		return e, osErr("list", "list", e.Target.DisplayPath, err)
	}
	e.Type = fileType(&st)
	e.Version = version(&st)
	if e.Type == fs.TypeFile {
		size := st.Size
		e.Size = &size
	}
	return e, nil
}

package fsbackend

import (
	"container/heap"
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/realpath"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
)

// listCheckEvery is how many names ListDir reads between context checks.
const listCheckEvery = 1024

// ListDir returns the window of the directory target's entries, sorted by
// byte-wise name comparison (spec decision 3), with metadata but never
// contents, and the number of entries in the whole directory (A-06,
// L-42..L-52). Children resolve from the directory's canonical path captured
// in target.Key (L-46). A child that is a symlink reports its destination's
// type and canonical key; one whose metadata cannot be read (dangling, a
// loop, a link into a directory the process may not search) is TypeOther
// without version or size, with a Reason (spec decision 16).
//
// Work is bounded by the window, not the directory: the names are read in
// batches, only the Offset-1+Limit smallest are kept (a max-heap), and only
// the window's entries are stat'ed. With Limit zero every name is kept.
// Errors, all about the directory itself: CodeNotFound, CodeNotDirectory,
// CodePermissionDenied, CodeIOError (a loop), CodeAborted.
func (f *Backend) ListDir(ctx context.Context, target fs.Target, window fs.ListWindow) (fs.Listing, error) {
	if err := checkCtx(ctx, "list"); err != nil {
		return fs.Listing{}, err
	}
	dp := target.DisplayPath
	rel, _ := f.host.Rel(string(target.Key))
	dir, _, err := f.host.OpenParent(rel, false)
	if errors.Is(err, unix.ENOTDIR) {
		return fs.Listing{}, newErr(fs.CodeNotDirectory, "list", dp, err, "cannot list %q: not a directory", dp)
	}
	if err != nil {
		return fs.Listing{}, osErr("list", "list", dp, err)
	}
	defer dir.Close() //nolint:errcheck // read-only descriptor
	skip := max(window.Offset-1, 0)
	keep := math.MaxInt
	if window.Limit > 0 && skip <= math.MaxInt-window.Limit {
		keep = skip + window.Limit
	}
	names, total, err := smallestNames(ctx, dir, keep, window.Progress)
	if err != nil {
		if fe, ok := errors.AsType[*fs.Error](err); ok {
			return fs.Listing{}, fe
		}
		return fs.Listing{}, osErr("list", "list", dp, err)
	}
	if skip >= len(names) {
		return fs.Listing{Entries: []fs.DirEntry{}, Total: total}, nil
	}
	entries := make([]fs.DirEntry, 0, len(names)-skip)
	for i, name := range names[skip:] {
		if i%listCheckEvery == 0 {
			if err := checkCtx(ctx, "list"); err != nil {
				return fs.Listing{}, err
			}
		}
		entries = append(entries, child(dir, string(target.Key), dp, name))
	}
	if err := checkCtx(ctx, "list"); err != nil {
		return fs.Listing{}, err
	}
	return fs.Listing{Entries: entries, Total: total}, nil
}

// smallestNames reads dir's names and returns the keep smallest in byte
// order, and how many names it read. It holds at most keep names at a time.
// A non-nil progress hears the count every listCheckEvery names.
func smallestNames(ctx context.Context, dir *dirfd.Parent, keep int, progress func(int)) ([]string, int, error) {
	var h maxHeap
	total := 0
	err := dir.EachName(func(name []byte) error {
		if total%listCheckEvery == 0 {
			if err := checkCtx(ctx, "list"); err != nil {
				return err
			}
			if progress != nil && total > 0 {
				progress(total)
			}
		}
		total++
		switch {
		case len(h) < keep:
			heap.Push(&h, string(name))
		case string(name) < h[0]: // compares without copying name
			h[0] = string(name)
			heap.Fix(&h, 0)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(h)
	return h, total, nil
}

// maxHeap is a container/heap of names with the greatest on top.
type maxHeap []string

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(string)) } //nolint:forcetypeassert // only strings are pushed
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// child describes one entry of dir, whose canonical path is key. An entry
// whose metadata cannot be read is TypeOther with a Reason; it never fails
// the listing (spec decision 16).
func child(dir *dirfd.Parent, key, dp, name string) fs.DirEntry {
	e := fs.DirEntry{
		Name:   name,
		Type:   fs.TypeOther,
		Target: fs.Target{Key: fs.TargetKey(filepath.Join(key, name)), DisplayPath: filepath.Join(dp, name)},
	}
	st, err := dir.Stat(name, false)
	if err != nil {
		// Removed since the names were read, or unreadable.
		e.Reason = reason(err, "removed while listing")
		return e
	}
	if dirfd.IsSymlink(&st) {
		st, err = dir.Stat(name, true)
		if err == nil {
			var canonical string
			if canonical, err = realpath.Canonical(string(e.Target.Key)); err == nil {
				e.Target.Key = fs.TargetKey(canonical)
			}
		}
		if err != nil {
			// No metadata through the link (L-44).
			e.Reason = reason(err, "dangling symlink")
			return e
		}
	}
	e.Type = fileType(&st)
	e.Version = version(&st)
	if e.Type == fs.TypeFile {
		size := st.Size
		e.Size = &size
	}
	return e
}

// reason is the short phrase of a DirEntry whose metadata err kept from
// being read; absent is the phrase for a missing file.
func reason(err error, absent string) string {
	var errno unix.Errno
	switch {
	case isAbsent(err):
		return absent
	case errors.Is(err, unix.ELOOP):
		return "symlink loop"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return "permission denied"
	case errors.As(err, &errno):
		return errno.Error()
	default:
		return err.Error()
	}
}

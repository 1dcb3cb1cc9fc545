package fsbackend

import (
	"container/heap"
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/realpath"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
)

// listCheckEvery is how many names ListDir reads between context checks.
const listCheckEvery = 1024

// errWalkCapped stops a tree walk at fs.MaxListTreeNames names; ListDir reports it
// as Listing.WalkCapped, never as an error.
var errWalkCapped = errors.New("list: the walk read fs.MaxListTreeNames names")

// ListDir returns the window of the directory target's entries, sorted by
// byte-wise name comparison (spec decision 3), with metadata but never
// contents, and the number of entries in the whole directory (A-06,
// L-42..L-52). Children resolve from the directory's canonical path captured
// in target.Key (L-46). A child that is a symlink reports its destination's
// type, modification time and canonical key with Symlink set; one whose
// metadata cannot be read (dangling, a loop, a link into a directory the
// process may not search) is TypeOther without version or size, with a
// Reason (spec decision 16).
//
// With window.Depth above 1 (at most fs.MaxListDepth; more is taken as
// fs.MaxListDepth) the window is over the tree, depth first: each
// subdirectory, then its own entries, down to Depth levels (issue 16).
// Subdirectories are opened beneath their parent's descriptor without
// following a symlink, so a symlink is listed, never descended; one that
// cannot be read keeps its entry, with the reason, and the walk goes on.
// Nothing is skipped: dot-names and ".git" are listed like any entry.
//
// Work is bounded by the window, not the directory: the names are read in
// batches, only the smallest Offset-1+Limit (less what was walked before)
// of each directory are kept (a max-heap), and only the window's entries
// are stat'ed; entries before the window are only lstat'ed, to know whether
// to descend. A tree walk stops once the window is full (Partial: the
// entries after it were not counted) and opens no further subdirectory
// once fs.MaxListTreeNames names were read (WalkCapped). With Limit zero
// every name is kept. Errors, all about the directory itself: CodeNotFound,
// CodeNotDirectory, CodePermissionDenied, CodeIOError (a loop),
// CodeAborted. The listing runs with the backend's filesystem identity
// (Settings.NewOwner).
func (f *Backend) ListDir(ctx context.Context, target fs.Target, window fs.ListWindow) (fs.Listing, error) {
	if err := checkCtx(ctx, "list"); err != nil {
		return fs.Listing{}, err
	}
	rel, _ := f.host.Rel(string(target.Key))
	var listing fs.Listing
	err := f.as.Do(func() (err error) {
		listing, err = f.listDir(ctx, target, rel, window)
		return err
	})
	return listing, err
}

// listDir is ListDir's listing of the directory rel (beneath the host
// handle), run with the backend's filesystem identity.
func (f *Backend) listDir(ctx context.Context, target fs.Target, rel string, window fs.ListWindow) (fs.Listing, error) {
	dp := target.DisplayPath
	dir, _, err := f.host.OpenParent(rel, false)
	if errors.Is(err, unix.ENOTDIR) {
		return fs.Listing{}, newErr(fs.CodeNotDirectory, "list", dp, err, "cannot list %q: not a directory", dp)
	}
	if err != nil {
		return fs.Listing{}, osErr("list", "list", dp, err)
	}
	defer dir.Close() //nolint:errcheck // read-only descriptor
	var st unix.Stat_t
	if err := unix.Fstat(dir.FD(), &st); err != nil {
		return fs.Listing{}, osErr("list", "list", dp, err)
	}
	if err := f.fence.Read(target, "list", dir.FD(), &st, false); err != nil {
		return fs.Listing{}, err
	}
	l := lister{
		fence:    f.fence,
		target:   target,
		ctx:      ctx,
		skip:     max(window.Offset-1, 0),
		keep:     math.MaxInt,
		depth:    min(max(window.Depth, 1), fs.MaxListDepth),
		maxNames: f.treeNames,
		progress: window.Progress,
		entries:  []fs.DirEntry{},
	}
	if window.Limit > 0 && l.skip <= math.MaxInt-window.Limit {
		l.keep = l.skip + window.Limit
	}
	err = l.walk(dir, string(target.Key), dp, "", 1)
	if errors.Is(err, errWalkCapped) {
		l.capped, l.partial, err = true, true, nil
	}
	if err != nil {
		if fe, ok := errors.AsType[*fs.Error](err); ok {
			return fs.Listing{}, fe
		}
		return fs.Listing{}, osErr("list", "list", dp, err)
	}
	if err := checkCtx(ctx, "list"); err != nil {
		return fs.Listing{}, err
	}
	return fs.Listing{Entries: l.entries, Total: l.total, Partial: l.partial, WalkCapped: l.capped}, nil
}

// lister is one ListDir walk: its window (skip entries, then keep up to
// position keep), its depth, and what it has walked and kept so far.
type lister struct {
	fence      Fence           // decides each subdirectory and symlink destination
	target     fs.Target       // the listed directory
	ctx        context.Context //nolint:containedctx // one walk's context
	skip, keep int
	depth      int
	maxNames   int // fs.MaxListTreeNames
	progress   func(names int)

	names   int // names read, every directory
	pos     int // entries walked, in window order
	total   int
	entries []fs.DirEntry
	partial bool
	capped  bool
}

// walk lists dir, whose canonical path is key and display path dp, at
// level (1 for the listed directory), prefix being its path relative to the
// listed directory with a trailing slash ("" for it). Only an error reading
// dir's own names, the context's end and errWalkCapped are returned; a
// subdirectory that cannot be read is marked on its entry.
func (l *lister) walk(dir *dirfd.Parent, key, dp, prefix string, level int) error {
	names, n, err := l.smallestNames(dir, l.keep-l.pos)
	if err != nil {
		return err
	}
	l.total += n
	for i, name := range names {
		if l.pos >= l.keep {
			// Names left at a level that descends may hold uncounted
			// entries.
			l.partial = l.partial || level < l.depth
			return nil
		}
		if i%listCheckEvery == 0 {
			if err := checkCtx(l.ctx, "list"); err != nil {
				return err
			}
		}
		l.pos++
		descend := level < l.depth
		at := -1
		if l.pos > l.skip {
			e := l.child(dir, key, dp, name)
			e.Path = prefix + name
			descend = descend && e.Type == fs.TypeDirectory && !e.Symlink
			at = len(l.entries)
			l.entries = append(l.entries, e)
		} else if descend {
			// Before the window: only whether to descend matters.
			st, err := dir.Stat(name, false)
			descend = err == nil && dirfd.IsDir(&st)
		}
		if !descend {
			continue
		}
		if l.pos >= l.keep {
			// The window is full: the subdirectory's entries are not
			// counted.
			l.partial = true
			return nil
		}
		if l.names >= l.maxNames {
			return errWalkCapped
		}
		if err := l.descend(dir, key, dp, prefix, name, level); err != nil {
			if _, ok := errors.AsType[*fs.Error](err); ok || errors.Is(err, errWalkCapped) {
				return err
			}
			if at >= 0 {
				l.entries[at].Reason = reason(err, "removed while listing")
			}
		}
	}
	if len(names) < n && level < l.depth {
		// Names past the window were counted, not descended.
		l.partial = true
	}
	return nil
}

// errNotListed is the reason on the entry of a subdirectory a tree listing
// does not enter: the fence refuses reading it (the deny-read set).
var errNotListed = errors.New("in the deny-read set: not listed")

// descend walks the subdirectory name of dir, opened without following a
// symlink (a directory swapped for one since it was stat'ed is not entered),
// unless the fence refuses reading it (errNotListed).
func (l *lister) descend(dir *dirfd.Parent, key, dp, prefix, name string, level int) error {
	sub, err := dir.OpenDirNoFollow(name)
	if err != nil {
		return err
	}
	defer sub.Close() //nolint:errcheck // read-only descriptor
	var st unix.Stat_t
	if err := unix.Fstat(sub.FD(), &st); err != nil {
		return err
	}
	if l.fence.Read(l.target, "list", sub.FD(), &st, false) != nil {
		return errNotListed
	}
	return l.walk(sub, filepath.Join(key, name), filepath.Join(dp, name), prefix+name+"/", level+1)
}

// smallestNames reads dir's names and returns the keep smallest in byte
// order, and how many names it read. It holds at most keep names at a time.
// A non-nil progress hears the walk's count every listCheckEvery names.
func (l *lister) smallestNames(dir *dirfd.Parent, keep int) ([]string, int, error) {
	var h maxHeap
	total := 0
	err := dir.EachName(func(name []byte) error {
		if l.names%listCheckEvery == 0 {
			if err := checkCtx(l.ctx, "list"); err != nil {
				return err
			}
			if l.progress != nil && l.names > 0 {
				l.progress(l.names)
			}
		}
		l.names++
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
// the listing (spec decision 16). A symlink's destination is described only
// when the fence admits its metadata (a link into a denied directory says
// so instead).
func (l *lister) child(dir *dirfd.Parent, key, dp, name string) fs.DirEntry {
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
		e.Symlink = true
		st, err = dir.Stat(name, true)
		if err == nil {
			var canonical string
			if canonical, err = realpath.Canonical(string(e.Target.Key)); err == nil {
				e.Target.Key = fs.TargetKey(canonical)
				err = l.admitEntry(dir, name)
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
	e.ModTime = time.Unix(st.Mtim.Unix()).UTC()
	if e.Type == fs.TypeFile {
		size := st.Size
		e.Size = &size
	}
	return e
}

// admitEntry asks the fence about the metadata of the destination of the
// symlink name in dir, opened with O_PATH beneath dir: errNotListed when it
// is refused.
func (l *lister) admitEntry(dir *dirfd.Parent, name string) error {
	fd, err := unix.Openat(dir.FD(), name, dirfd.OPath|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd) //nolint:errcheck // O_PATH descriptor
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if l.fence.Read(l.target, "list", fd, &st, true) != nil {
		return errNotListed
	}
	return nil
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

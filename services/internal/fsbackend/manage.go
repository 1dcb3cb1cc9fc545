package fsbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/journal"
)

// Limits of the entry operations.
const (
	// maxRemoveDepth bounds how deep a recursive removal descends: it holds
	// one directory descriptor per level (Linux's default limit of open
	// descriptors is 1024).
	maxRemoveDepth = 256
	// maxCopyBytes bounds the file a move between filesystems copies: the
	// copy is published through the atomic write, which holds it in
	// memory.
	maxCopyBytes = 256 << 20
)

// Mkdir creates the directory at target through the Fence (see
// fs.Manager.Mkdir): every directory is made by mkdirat on a descriptor
// opened beneath the site's root, after the fence decided the new entry in
// its open parent (Change).
func (f *Backend) Mkdir(ctx context.Context, target fs.Target, opts fs.MkdirOptions) (fs.MkdirOutcome, error) {
	const op = "mkdir"
	if err := f.journalReady(ctx, op, target.DisplayPath); err != nil {
		return fs.MkdirOutcome{}, err
	}
	var out fs.MkdirOutcome
	err := f.mutate(ctx, opts.Policy, []fs.Target{target}, op, func(at []Site) error {
		return f.locked(ctx, at[0].Target.Key, op, func() (err error) {
			out, err = f.mkdir(ctx, at[0], opts.Parents)
			return err
		})
	})
	if err != nil {
		return fs.MkdirOutcome{}, err
	}
	return out, nil
}

// mkdir journals the directories it will make (Settings.Journal) before it
// makes any, and which it made after (the outcome's After, parents first).
func (f *Backend) mkdir(ctx context.Context, at Site, parents bool) (out fs.MkdirOutcome, err error) {
	const op, verb = "mkdir", "create directory"
	root, target := at.Root, at.Target
	dp := target.DisplayPath
	exists := newErr(fs.CodeAlreadyExists, op, dp, nil, "cannot create directory %q: it already exists", dp)
	rel, ok := root.Rel(string(target.Key))
	if !ok {
		// Fail closed: a target outside the handle is never mutated.
		return fs.MkdirOutcome{}, osErr(op, verb, dp, &os.PathError{Op: op, Path: string(target.Key), Err: unix.EXDEV})
	}
	if rel == "" {
		// The handle's own directory: a writable root, or "/".
		if parents {
			return fs.MkdirOutcome{}, nil
		}
		return fs.MkdirOutcome{}, exists
	}
	dir, name := path.Split(rel)
	dir = path.Clean(dir + ".")
	if err := checkNames(dir, name); err != nil {
		return fs.MkdirOutcome{}, osErr(op, verb, dp, err)
	}
	key := string(target.Key)
	ch, err := f.beginChange(ctx, journal.Mkdir, op, dp, key)
	if err != nil {
		return fs.MkdirOutcome{}, err
	}
	if err := ch.commit(journal.Node{Path: key, Type: journal.Dir}); err != nil {
		return fs.MkdirOutcome{}, err
	}
	defer func() { ch.finish(out.Created > 0, made(key, out.Created)...) }()
	parent, created, err := root.OpenParent(dir, parents)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fs.MkdirOutcome{}, newErr(fs.CodeNotFound, op, dp, err, "cannot create directory %q: the parent directory does not exist (set parents to create it)", dp)
		}
		return fs.MkdirOutcome{}, osErr(op, verb, dp, err)
	}
	defer parent.Close() //nolint:errcheck // directory descriptor; nothing written through it
	if err := f.fence.Change(at, parent, name, nil); err != nil {
		// The fence refuses the entry (a denied path, or one holding a
		// denied path, on the open parent's real path): the missing
		// parents made for it are removed again.
		if created > 0 {
			_ = root.RemoveCreated(dir, created)
		}
		return fs.MkdirOutcome{}, osErr(op, verb, dp, err)
	}
	err = parent.Mkdir(name)
	if errors.Is(err, unix.EEXIST) {
		if st, serr := parent.Stat(name, false); parents && serr == nil && dirfd.IsDir(&st) {
			return fs.MkdirOutcome{Created: created}, nil
		}
		return fs.MkdirOutcome{}, exists
	}
	if err != nil {
		if created > 0 {
			_ = root.RemoveCreated(dir, created)
		}
		return fs.MkdirOutcome{}, osErr(op, verb, dp, err)
	}
	return fs.MkdirOutcome{Created: created + 1}, nil
}

// made returns the nodes of the n directories a mkdir of key made: key
// and its n-1 nearest ancestors, parents first.
func made(key string, n int) []journal.Node {
	out := make([]journal.Node, n)
	for i := n - 1; i >= 0; i-- {
		out[i] = journal.Node{Path: key, Type: journal.Dir}
		key = path.Dir(key)
	}
	return out
}

// entry is an entry mutation on its parent directory, the site the fence
// admitted: the entry is addressed by name inside the parent, so a final
// symlink is never followed.
type entry struct {
	at    Site
	name  string
	shown string // the entry's display path
}

// key is the entry's identity for the lock table: its canonical parent
// joined with its name.
func (e entry) key() fs.TargetKey {
	return fs.TargetKey(path.Join(string(e.at.Target.Key), e.name))
}

// entryParent returns the parent directory of target's display path,
// resolved, and the entry's name: the fence admits the directory the entry
// lives in (a writable root's own entry lies in a directory outside it, so it
// is never admitted).
func (f *Backend) entryParent(ctx context.Context, target fs.Target, op, verb string) (fs.Target, string, error) {
	dp := target.DisplayPath
	dir, name := filepath.Split(dp)
	if name == "" || name == "." || name == ".." {
		return fs.Target{}, "", newErr(fs.CodePermissionDenied, op, dp, nil, "cannot %s %q: it is the root directory", verb, dp)
	}
	parent, err := f.Resolve(ctx, filepath.Clean(dir), fs.ResolveOptions{})
	if err != nil {
		return fs.Target{}, "", err
	}
	return parent, name, nil
}

// openParent opens the entry's parent directory beneath the site's root.
func (e entry) openParent() (*dirfd.Parent, error) {
	rel, ok := e.at.Root.Rel(string(e.at.Target.Key))
	if !ok {
		// Fail closed: a parent outside the handle is never mutated.
		return nil, &os.PathError{Op: "open", Path: string(e.at.Target.Key), Err: unix.EXDEV}
	}
	p, _, err := e.at.Root.OpenParent(rel, false)
	return p, err
}

// admit asks the fence to decide the entry itself in its open parent: the
// fence admitted the parent, which may lie outside a protected path the
// entry is (a .git directory, a --protect pattern).
func (f *Backend) admit(e entry, parent *dirfd.Parent) error {
	return f.fence.Change(e.at, parent, e.name, nil)
}

// admitAll is the fence's decision on every entry of a tree e's removal
// walks (removeTree's admit); nil when the fence decides no entry.
func (f *Backend) admitAll(e entry) func(*dirfd.Parent, string) error {
	if !e.at.Decides {
		return nil
	}
	return func(parent *dirfd.Parent, name string) error { return f.fence.Change(e.at, parent, name, nil) }
}

// Remove deletes the entry at target through the Fence, which admits its
// parent (see fs.Manager.Remove).
func (f *Backend) Remove(ctx context.Context, target fs.Target, opts fs.RemoveOptions) (fs.RemoveOutcome, error) {
	const op = "delete"
	parent, name, err := f.entryParent(ctx, target, op, op)
	if err != nil {
		return fs.RemoveOutcome{}, err
	}
	if err := f.journalReady(ctx, op, target.DisplayPath); err != nil {
		return fs.RemoveOutcome{}, err
	}
	var out fs.RemoveOutcome
	err = f.mutate(ctx, opts.Policy, []fs.Target{parent}, op, func(at []Site) error {
		e := entry{at: at[0], name: name, shown: target.DisplayPath}
		return f.lockKeys(ctx, op, []fs.TargetKey{e.key()}, func() (err error) {
			out, err = f.remove(ctx, e, opts)
			return err
		})
	})
	if err != nil {
		return fs.RemoveOutcome{}, err
	}
	return out, nil
}

func (f *Backend) remove(ctx context.Context, e entry, opts fs.RemoveOptions) (fs.RemoveOutcome, error) {
	const op = "delete"
	dp := e.shown
	parent, err := e.openParent()
	if err != nil {
		return fs.RemoveOutcome{}, osErr(op, op, dp, err)
	}
	defer parent.Close() //nolint:errcheck // directory descriptor
	if err := f.admit(e, parent); err != nil {
		return fs.RemoveOutcome{}, osErr(op, op, dp, err)
	}
	st, err := parent.Stat(e.name, false)
	if err != nil {
		return fs.RemoveOutcome{}, osErr(op, op, dp, err)
	}
	if opts.Version != "" && dirfd.IsRegular(&st) && version(&st) != opts.Version {
		return fs.RemoveOutcome{}, stale(op, dp)
	}
	admit := f.admitAll(e)
	if dirfd.IsDir(&st) && opts.Recursive {
		// Every entry beneath is decided against the protected paths
		// first (a nested repository's .git), so a refusal deletes
		// nothing; the removal decides each entry again as it goes.
		if err := removeTree(ctx, parent, e.name, 0, nil, admit); err != nil {
			return fs.RemoveOutcome{}, osErr(op, op, dp, err)
		}
	}
	key := string(e.key())
	ch, err := f.beginChange(ctx, journal.Delete, op, dp, key)
	if err != nil {
		return fs.RemoveOutcome{}, err
	}
	if _, err := ch.capture(parent, e.name, key, opts.Recursive); err != nil {
		return fs.RemoveOutcome{}, err
	}
	if err := ch.commit(); err != nil {
		return fs.RemoveOutcome{}, err
	}
	out, err := f.unlink(ctx, parent, e, &st, opts, admit)
	if ch != nil {
		_, serr := parent.Stat(e.name, false)
		ch.finish(err == nil || isAbsent(serr) || out.Files+out.Directories+out.Others > 0)
		out.Note = ch.notKept()
	}
	return out, err
}

// unlink removes the entry e (whose lstat is st) from its open parent: a
// directory only when empty, unless opts.Recursive; admit decides each
// entry of a tree.
func (f *Backend) unlink(ctx context.Context, parent *dirfd.Parent, e entry, st *unix.Stat_t, opts fs.RemoveOptions, admit func(*dirfd.Parent, string) error) (fs.RemoveOutcome, error) {
	const op = "delete"
	dp := e.shown
	var err error
	out := fs.RemoveOutcome{Type: fileType(st)}
	if !dirfd.IsDir(st) {
		if err := parent.Unlink(e.name, false); err != nil {
			return fs.RemoveOutcome{}, osErr(op, op, dp, err)
		}
		return out, syncOrErr(parent, op, dp)
	}
	if opts.Recursive {
		err = removeTree(ctx, parent, e.name, 0, &out, admit)
	} else {
		err = parent.Unlink(e.name, true)
	}
	out.Directories += boolInt(err == nil)
	switch {
	case errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST):
		msg := fmt.Sprintf("cannot delete %q: the directory is not empty (set recursive to delete it and everything in it)", dp)
		if opts.Recursive {
			msg = fmt.Sprintf("cannot delete %q: entries appeared while it was being deleted", dp)
		}
		return out, newErr(fs.CodeNotEmpty, op, dp, err, "%s%s", msg, removed(out))
	case err != nil:
		fe := osErr(op, op, dp, err)
		fe.Message += removed(out)
		return out, fe
	}
	return out, syncOrErr(parent, op, dp)
}

// removeTree removes the directory name inside parent and everything beneath
// it, entry by entry: each directory is opened beneath the fence without
// following a symlink, each entry is decided by admit (the fence's Change;
// nil admits all) and unlinked by name from its opened directory, so
// nothing outside the tree, and no protected path inside it, is ever
// reached. Counts go to out. With out nil it removes nothing: the same walk
// only runs admit on every entry and returns the first refusal, so what a
// recursive delete would remove is decided before anything is.
func removeTree(ctx context.Context, parent *dirfd.Parent, name string, depth int, out *fs.RemoveOutcome, admit func(*dirfd.Parent, string) error) error {
	if out == nil && admit == nil {
		return nil
	}
	if depth >= maxRemoveDepth {
		return &os.PathError{Op: "remove", Path: parent.Join(name), Err: fmt.Errorf("deeper than %d directories", maxRemoveDepth)}
	}
	dir, err := parent.OpenDirNoFollow(name)
	if err != nil {
		return err
	}
	defer dir.Close() //nolint:errcheck // directory descriptor
	names, err := dir.Names()
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if admit != nil {
			if err := admit(dir, n); err != nil {
				return err
			}
		}
		st, err := dir.Stat(n, false)
		if isAbsent(err) {
			continue // removed by someone else meanwhile
		}
		if err != nil {
			return err
		}
		if dirfd.IsDir(&st) {
			if err := removeTree(ctx, dir, n, depth+1, out, admit); err != nil {
				return err
			}
			if out != nil {
				out.Directories++
			}
			continue
		}
		if out == nil {
			continue
		}
		if err := dir.Unlink(n, false); err != nil && !isAbsent(err) {
			return err
		}
		if dirfd.IsRegular(&st) {
			out.Files++
		} else {
			out.Others++
		}
	}
	if out == nil {
		return nil
	}
	return parent.Unlink(name, true)
}

// removed is the message suffix saying what a failed removal already
// deleted, "" when nothing.
func removed(out fs.RemoveOutcome) string {
	if out.Files+out.Directories+out.Others == 0 {
		return ""
	}
	return fmt.Sprintf(" (already deleted: %d files, %d directories, %d others)", out.Files, out.Directories, out.Others)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// syncOrErr makes the parent's changed entries durable.
func syncOrErr(parent *dirfd.Parent, op, dp string) error {
	if err := parent.Sync(); err != nil {
		return osErr(op, op, dp, err)
	}
	return nil
}

// lockKeys takes the locks of keys in sorted order (two moves in opposite
// directions never deadlock), unless ctx has ended, and runs mutate.
func (f *Backend) lockKeys(ctx context.Context, op string, keys []fs.TargetKey, mutate func() error) error {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	for _, k := range keys {
		unlock, err := f.locks.lock(ctx, k)
		if err != nil {
			return aborted(op, err)
		}
		defer unlock()
	}
	return mutate()
}

// Move renames the entry at source to dest through the Fence, which admits
// both parents and runs the rename once, under a single domain covering both
// roots when it has one (see fs.Manager.Move).
func (f *Backend) Move(ctx context.Context, source, dest fs.Target, opts fs.MoveOptions) (fs.MoveOutcome, error) {
	const op = "move"
	sparent, sname, err := f.entryParent(ctx, source, op, op)
	if err != nil {
		return fs.MoveOutcome{}, err
	}
	if err := f.journalReady(ctx, op, source.DisplayPath); err != nil {
		return fs.MoveOutcome{}, err
	}
	dparent, dname, err := f.entryParent(ctx, dest, op, op)
	if err != nil {
		return fs.MoveOutcome{}, err
	}
	var out fs.MoveOutcome
	err = f.mutate(ctx, opts.Policy, []fs.Target{sparent, dparent}, op, func(at []Site) error {
		src := entry{at: at[0], name: sname, shown: source.DisplayPath}
		dst := entry{at: at[1], name: dname, shown: dest.DisplayPath}
		return f.lockKeys(ctx, op, []fs.TargetKey{src.key(), dst.key()}, func() (err error) {
			out, err = f.move(ctx, src, dst, opts)
			return err
		})
	})
	if err != nil {
		return fs.MoveOutcome{}, err
	}
	return out, nil
}

func (f *Backend) move(ctx context.Context, src, dst entry, opts fs.MoveOptions) (fs.MoveOutcome, error) {
	const op = "move"
	sdp, ddp := src.shown, dst.shown
	sp, err := src.openParent()
	if err != nil {
		return fs.MoveOutcome{}, osErr(op, op, sdp, err)
	}
	defer sp.Close() //nolint:errcheck // directory descriptor
	dp, err := dst.openParent()
	if errors.Is(err, unix.ENOENT) {
		return fs.MoveOutcome{}, newErr(fs.CodeNotFound, op, ddp, err, "cannot move %q to %q: the destination directory does not exist", sdp, ddp)
	}
	if err != nil {
		return fs.MoveOutcome{}, osErr(op, op, ddp, err)
	}
	defer dp.Close() //nolint:errcheck // directory descriptor
	if err := f.admit(src, sp); err != nil {
		return fs.MoveOutcome{}, osErr(op, op, sdp, err)
	}
	if err := f.admit(dst, dp); err != nil {
		return fs.MoveOutcome{}, osErr(op, op, ddp, err)
	}
	st, err := sp.Stat(src.name, false)
	if err != nil {
		return fs.MoveOutcome{}, osErr(op, op, sdp, err)
	}
	if opts.Version != "" && dirfd.IsRegular(&st) && version(&st) != opts.Version {
		return fs.MoveOutcome{}, stale(op, sdp)
	}
	out := fs.MoveOutcome{Type: fileType(&st), Prior: version(&st)}
	if _, err := dp.Stat(dst.name, false); err == nil {
		if !opts.Overwrite {
			return fs.MoveOutcome{}, alreadyExists(sdp, ddp, nil)
		}
		out.Replaced = true
	}
	ch, err := f.journalMove(ctx, sp, dp, src, dst, &st, out.Replaced)
	if err != nil {
		return fs.MoveOutcome{}, err
	}
	out, err = f.rename(ctx, sp, dp, src, dst, &st, opts, out)
	var after []journal.Node
	if now, serr := dp.Stat(dst.name, false); err == nil && serr == nil {
		after = []journal.Node{node(string(dst.key()), &now, ch.hash(string(src.key())))}
	}
	ch.finish(err == nil, after...)
	out.Note = ch.notKept()
	return out, err
}

// journalMove journals a move (Settings.Journal) before it runs: the
// source's own node (a file with its content; what lies beneath a
// directory moves with it) and, when the move replaces one, the whole
// destination; After is the source's node at the destination.
func (f *Backend) journalMove(ctx context.Context, sp, dp *dirfd.Parent, src, dst entry, st *unix.Stat_t, replaces bool) (*change, error) {
	skey, dkey := string(src.key()), string(dst.key())
	ch, err := f.beginChange(ctx, journal.Move, "move", src.shown, skey, dkey)
	if err != nil || ch == nil {
		return nil, err
	}
	nodes, err := ch.capture(sp, src.name, skey, false)
	if err != nil {
		return nil, err
	}
	if replaces {
		if _, err := ch.capture(dp, dst.name, dkey, true); err != nil {
			return nil, err
		}
	}
	hash := ""
	if len(nodes) > 0 {
		hash = nodes[0].Hash
	}
	if err := ch.commit(node(dkey, st, hash)); err != nil {
		return nil, err
	}
	return ch, nil
}

// rename moves src to dst (copying a regular file across filesystems) and
// makes both directories durable; out is the outcome so far.
func (f *Backend) rename(ctx context.Context, sp, dp *dirfd.Parent, src, dst entry, st *unix.Stat_t, opts fs.MoveOptions, out fs.MoveOutcome) (fs.MoveOutcome, error) {
	const op = "move"
	sdp, ddp := src.shown, dst.shown
	err := sp.Rename(src.name, dp, dst.name, opts.Overwrite)
	if errors.Is(err, unix.EXDEV) && !dirfd.IsEscape(checkBoth(sp, dp)) {
		// Both parents are still beneath their roots: EXDEV came from the
		// rename between two mounts, not from the fence.
		if out.Copied = true; !dirfd.IsRegular(st) {
			return fs.MoveOutcome{}, newErr(fs.CodeCrossDevice, op, sdp, nil,
				"cannot move %q to %q: they are on different filesystems, and only a regular file is copied across", sdp, ddp)
		}
		err = f.copyAcross(ctx, sp, src.name, dp, dst.name, st, opts.Overwrite, sdp, ddp)
	}
	if err != nil {
		return fs.MoveOutcome{}, moveErr(err, sdp, ddp)
	}
	if err := sp.Sync(); err != nil {
		return fs.MoveOutcome{}, osErr(op, op, sdp, err)
	}
	if err := dp.Sync(); err != nil {
		return fs.MoveOutcome{}, osErr(op, op, ddp, err)
	}
	if now, err := dp.Stat(dst.name, false); err == nil {
		out.Version = version(&now)
	}
	return out, nil
}

// checkBoth re-checks both parents beneath their roots.
func checkBoth(a, b *dirfd.Parent) error {
	return errors.Join(a.CheckBeneath(), b.CheckBeneath())
}

// copyAcross copies the regular file name in sp to newName in dp through
// the atomic write (never replacing unless replace), then removes the
// source.
func (f *Backend) copyAcross(ctx context.Context, sp *dirfd.Parent, name string, dp *dirfd.Parent, newName string, st *unix.Stat_t, replace bool, sdp, ddp string) error {
	const op = "move"
	if st.Size > maxCopyBytes {
		return newErr(fs.CodeTooLarge, op, sdp, nil, "cannot move %q to %q: a copy between filesystems is limited to %d bytes", sdp, ddp, maxCopyBytes)
	}
	file, fst, err := sp.OpenRead(name)
	if err != nil {
		return err
	}
	defer file.Close() //nolint:errcheck // read-only descriptor
	if fst.Dev != st.Dev || fst.Ino != st.Ino {
		return stale(op, sdp)
	}
	content, err := readAll(ctx, file, fst.Size, maxCopyBytes+1)
	if err != nil {
		return err
	}
	pub := atomicwrite.CreateOnly
	if replace {
		pub = atomicwrite.Replace
	}
	if err := dp.CheckBeneath(); err != nil {
		return err
	}
	res, err := atomicwrite.Write(ctx, atomicwrite.Request{
		Parent: dp, Name: newName, Content: string(content), Publication: pub,
		Durability: f.cfg.Durability, Owner: f.cfg.NewOwner, Syncs: &f.syncs,
	})
	if collision, ok := errors.AsType[*atomicwrite.CollisionError](err); ok {
		return alreadyExists(sdp, ddp, collision)
	}
	if res.Residue != nil {
		f.log.Warn("staging cleanup failed after a copy between filesystems", zap.Error(res.Residue))
	}
	if err != nil {
		return err
	}
	if err := keepMode(dp, newName, dirfd.Perm(&fst)); err != nil {
		return err
	}
	return sp.Unlink(name, false)
}

func alreadyExists(sdp, ddp string, cause error) *fs.Error {
	return newErr(fs.CodeAlreadyExists, "move", ddp, cause, "cannot move %q to %q: the destination already exists (set overwrite to replace it)", sdp, ddp)
}

// moveErr maps a failed rename to the move's structured error.
func moveErr(err error, sdp, ddp string) error {
	const op = "move"
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return osErr(op, op, sdp, err)
	}
	switch errno {
	case unix.EEXIST:
		return alreadyExists(sdp, ddp, err)
	case unix.ENOTEMPTY:
		return newErr(fs.CodeNotEmpty, op, ddp, err, "cannot move %q to %q: the destination is a directory that is not empty", sdp, ddp)
	case unix.ENOTDIR:
		return newErr(fs.CodeNotDirectory, op, ddp, err, "cannot move directory %q over %q: the destination is not a directory", sdp, ddp)
	case unix.EISDIR:
		return newErr(fs.CodeNotRegularFile, op, ddp, err, "cannot move %q over %q: the destination is a directory", sdp, ddp)
	case unix.EINVAL:
		return newErr(fs.CodeNotDirectory, op, ddp, err, "cannot move %q into itself (%q)", sdp, ddp)
	}
	return osErr(op, op, sdp, err)
}

// keepMode gives the file name in dir the permission bits mode, through a
// descriptor opened without following a symlink (the copy's mode is the
// source's, not the new-file default).
func keepMode(dir *dirfd.Parent, name string, mode uint32) error {
	fd, err := unix.Openat(dir.FD(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir.Join(name), Err: err}
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	if err := unix.Fchmod(fd, mode); err != nil {
		return &os.PathError{Op: "chmod", Path: dir.Join(name), Err: err}
	}
	return nil
}

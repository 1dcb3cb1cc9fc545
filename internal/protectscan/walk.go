package protectscan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// dirFlags opens a directory for reading without following a symlink and
// without blocking.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// openedRoot is a root of the scan with its descriptor.
type openedRoot struct {
	Root
	fd    int
	owner int // Owner in a Shared root, -1 elsewhere (the cache's owner rule)
}

// walk is the state of one Scan.
type walk struct {
	s       *Scanner
	ctx     context.Context
	match   Match
	seq     uint64 // this scan's number, for the cache's eviction
	readAt  int64  // wall clock at the scan's start, Unix nanoseconds
	buf     []byte // the getdents buffer
	rel     []byte // the path given to match, reused for every entry
	mounts  []byte // the mount table read before the walk (dirwatch.MountTable)
	entries int    // entries read from uncached directories
	found   map[string]Entry
	roots   []*openedRoot
	gitdirs []string        // clean absolute paths named by `.git` files
	gitDirs map[string]bool // the git directories found, for the split
	links   map[string]bool // the protected entries found that are symlinks (linkedEntries)
	// unwatched is set when a directory of the walk is not watched: its
	// result cannot be kept current.
	unwatched bool
	// reused is set when the walk took a kept result.
	reused bool
	// dirs are the directories whose listings the walk used.
	dirs map[devIno]struct{}
}

// close releases the roots' descriptors.
func (w *walk) close() {
	for _, r := range w.roots {
		_ = unix.Close(r.fd)
	}
	w.roots = nil
}

// errRootReplaced is reuse's refusal of a kept result whose roots are no
// longer the directories it read.
var errRootReplaced = errors.New("a root was replaced since the kept result")

// rootIDs returns the identity of each opened root, in order; ok is false
// when one cannot be read.
func (w *walk) rootIDs() ([]devIno, bool) {
	ids := make([]devIno, 0, len(w.roots))
	for _, r := range w.roots {
		var st unix.Stat_t
		if unix.Fstat(r.fd, &st) != nil {
			return nil, false
		}
		ids = append(ids, devIno{dirfd.Dev(&st), st.Ino})
	}
	return ids, true
}

// run opens every root, searches each, hands what the roots' directories
// decided to walked, then follows the gitdirs found.
func (w *walk) run(roots []Root, walked func()) error {
	if err := w.open(roots); err != nil {
		return err
	}
	for _, r := range w.roots {
		var st unix.Stat_t
		if err := unix.Fstat(r.fd, &st); err != nil {
			return &os.PathError{Op: "fstat", Path: r.Path, Err: err}
		}
		if err := w.visit(r, r.fd, &st, r.Path, "", 0); err != nil {
			return err
		}
	}
	walked()
	return w.finish()
}

// reuse opens every root and takes what an earlier walk of them found
// (kept current: no event since said otherwise), then follows the gitdirs
// as run does.
// It returns errRootReplaced, having taken nothing, when a root is not the
// directory the earlier walk read (it, or a directory above it, was moved or
// removed and another put in its place: no watched directory tells).
func (w *walk) reuse(roots []Root, m *memo) error {
	if err := w.open(roots); err != nil {
		return err
	}
	if ids, ok := w.rootIDs(); !ok || !slices.Equal(ids, m.ids) {
		return errRootReplaced
	}
	w.found, w.gitDirs, w.links = maps.Clone(m.found), maps.Clone(m.gitDirs), maps.Clone(m.links)
	if err := w.pointers(); err != nil {
		return err
	}
	return w.finish()
}

// pointers reads again the gitdir every `.git` file found names (its
// content can change without an event that tells: a write through another
// link), as the walk's protect does.
func (w *walk) pointers() error {
	w.gitdirs = w.gitdirs[:0]
	for _, p := range slices.Sorted(maps.Keys(w.found)) {
		if w.found[p].Dir || filepath.Base(p) != ".git" {
			continue
		}
		parent := filepath.Dir(p)
		r, rel := w.rootOf(parent)
		if r == nil {
			continue
		}
		dirfd := r.fd
		if rel != "" {
			fd, _, ok, err := openBeneath(r, rel, parent)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			dirfd = fd
		}
		target, ok, err := readPointer(dirfd, ".git", p, "gitdir: ", r.owner)
		if dirfd != r.fd {
			_ = unix.Close(dirfd)
		}
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(parent, target)
		}
		w.gitdirs = append(w.gitdirs, filepath.Clean(target))
	}
	return nil
}

// finish follows the gitdirs `.git` files named, splits the git
// directories found and protects what their members link to.
func (w *walk) finish() error {
	if err := w.followGitdirs(); err != nil {
		return err
	}
	if w.s.splitGit {
		if err := w.splitGitdirs(); err != nil {
			return err
		}
	}
	w.linkedMembers()
	w.linkedEntries()
	w.linksInside()
	return nil
}

// linksInsideMax bounds the entries linksInside reads in each protected
// directory (with what it holds).
const linksInsideMax = 4096

// linksInside adds what each symlink inside a protected directory links to
// (linked): a `.config/git/config` or `.vscode/tasks.json` linked into a
// dotfiles tree is read by the host's program as if it were in the
// directory, whose own protection does not reach it (the review of issue
// 34). A protected directory is read-only to commands, so the links in it
// stay as they are. Not read: a git or other version-control directory
// (their links are linkedMembers'), and past linksInsideMax entries of one
// protected directory (a large --protect directory), the directories that
// do not fit (linksIn). The bound is each directory's own: one that a command
// filled before it became protected (`.a/.vscode/`, sorting first) leaves
// the others read in full (the review: a bound over all of them let such a
// directory hide `.config/git/config`'s link).
func (w *walk) linksInside() {
	var dirs []string
	for p, e := range w.found {
		if e.Dir && !e.Split && !e.Missing && !w.gitDirs[p] && !slices.Contains([]string{".git", ".hg", ".jj", ".svn"}, filepath.Base(p)) {
			dirs = append(dirs, p)
		}
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		w.linksIn(d)
	}
}

// linksIn is linksInside of the protected directory top: it and what it
// holds, shallowest first, at most linksInsideMax entries (a directory
// holding more than is left of them is passed over, the others read: the
// review's `.claude/plugins/market/` of 5,000 files hid
// `.claude/skills/foo/run.sh`'s link), each directory's listing from the
// Scanner's linkCache when it has not changed.
func (w *walk) linksIn(top string) {
	w.s.links.beneath(top, linksInsideMax, w.linked)
}

// linkedEntries adds, for each protected entry found that is a symlink (a
// `.bashrc` or `.config/git` linked into a dotfiles tree, as stow and
// chezmoi lay them out; a `.git` link's repository, found by its shape,
// is covered already), the file or directory it resolves to, as linkedMembers
// does for a git directory's members, with Via naming the link: the host's
// program reads what is there, and a command or the write tool writing
// through the link reached it unprotected (the attack review of issue 34).
// The link itself is not protected: a command can still remove it and put
// a file in its place.
func (w *walk) linkedEntries() {
	for _, p := range slices.Sorted(maps.Keys(w.links)) {
		w.linked(p)
	}
}

// linked adds what p resolves to (ResolveLink), when that differs from p,
// lies in a root, is not covered yet, and neither is nor holds a root nor
// holds p itself (a `src/.envrc` linked to `.` would make its own directory
// read-only for good: the attack review), as an entry with Via p.
func (w *walk) linked(p string) {
	var st unix.Stat_t
	target, ok := ResolveLink(p, &st)
	if !ok || target == p || strings.HasPrefix(p, target+"/") {
		return
	}
	if r, _ := w.rootOf(target); r == nil || w.covered(target) || w.holdsRoot(target) {
		return
	}
	w.found[target] = Entry{Path: target, Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, Via: p}
}

// linkedMembers adds, for each read-only member of a git directory found
// (repoMembers: hooks/, config, info/attributes, ...) reached through a
// symlink (the member or a directory on its way: `.git/hooks` linked to a
// `githooks/` of the tree), the file or directory it resolves to, when that
// lies in a root and no entry covers it yet, with Via naming the member:
// git runs or reads what is there as if it were in the git directory, and
// the git directory's own protection does not reach it. Read again at
// every walk and reuse (a member is read-only to commands, but the host
// may change it). Not protected (the policy's "not covered" list says so):
// a target that is a root or holds one (protecting it would make the root
// read-only: a command's nested repository whose hooks name the workspace
// is disarmed when the command ends instead), a missing target, and one
// reached through a further symlink inside a root (which a command could
// point elsewhere).
func (w *walk) linkedMembers() {
	for _, dir := range slices.Sorted(maps.Keys(w.gitDirs)) {
		if _, ok := w.found[dir]; !ok {
			continue
		}
		for _, m := range repoMembers {
			w.linked(filepath.Join(dir, m.rel))
		}
	}
}

// holdsRoot reports whether path is a root or holds one.
func (w *walk) holdsRoot(path string) bool {
	for _, r := range w.roots {
		if _, ok := below(path, r.Path); ok || r.Path == path {
			return true
		}
	}
	return false
}

// covered reports whether an entry protects path already: path itself, or
// a directory entry holding it (not a split git directory, whose members
// alone are protected).
func (w *walk) covered(path string) bool {
	if e, ok := w.found[path]; ok && !e.Missing {
		return true
	}
	for d := filepath.Dir(path); d != filepath.Dir(d); d = filepath.Dir(d) {
		if e, ok := w.found[d]; ok && e.Dir && !e.Split && !e.Missing {
			return true
		}
	}
	return false
}

// open opens every root.
func (w *walk) open(roots []Root) error {
	for _, r := range roots {
		fd, err := openRoot(r.Path)
		if err != nil {
			return err
		}
		or := &openedRoot{Root: r, fd: fd, owner: -1}
		if r.Shared {
			or.owner = r.Owner
		}
		w.roots = append(w.roots, or)
	}
	return nil
}

// openRoot opens the canonical directory path, refusing a symlink anywhere
// in it.
func openRoot(path string) (int, error) {
	for range 64 { // EAGAIN: a concurrent rename; the kernel documents a retry
		fd, err := dirfd.OpenNoSymlinks(path, dirFlags)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open root", Path: path, Err: err}
		}
		return fd, nil
	}
	return -1, &os.PathError{Op: "open root", Path: path, Err: unix.EAGAIN}
}

// visit searches the directory fd (stat st) at path, rel below root r, at
// depth levels below it: from the cache when fresh, else by reading it.
func (w *walk) visit(r *openedRoot, fd int, st *unix.Stat_t, path, rel string, depth int) error {
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	// Watched before it is read: a change after this point is an event.
	if !watchDir(fd, st, path) {
		w.unwatched = true
	}
	w.used(st)
	key := dirKey{dev: dirfd.Dev(st), ino: st.Ino, rel: rel, owner: r.owner}
	l, ok := w.s.cache.get(key, st, w.seq)
	if !ok {
		var err error
		if l, err = w.read(r, fd, st, path, rel); err != nil {
			return err
		}
		w.s.cache.put(key, l, w.seq)
	}
	return w.use(r, fd, dirfd.Dev(st), path, rel, depth, l)
}

// use takes the listing l of the directory fd (on device dev) at path, rel
// below root r, at depth levels below it: it records l's protected entries
// and searches its subdirectories. fd may be -1 when l does not need it
// (listing.needsFD).
func (w *walk) use(r *openedRoot, fd int, dev uint64, path, rel string, depth int, l *listing) error {
	if l.repo() && rel != "" && !w.s.enterRepos {
		// A repository by its shape (a bare one, a gitdir kept apart):
		// protected whole, as the file fence decides, and not searched.
		w.found[path] = Entry{Path: path, Dev: dev, Ino: l.ino, Dir: true}
		w.gitDirs[path] = true
		return nil
	}
	for i := range l.protected {
		if err := w.protect(r, fd, path, &l.protected[i]); err != nil {
			return err
		}
	}
	if len(l.subdirs) > 0 && depth >= w.s.maxDepth {
		return &BudgetError{Dir: filepath.Join(path, l.subdirs[0].name), Entries: w.entries, Depth: w.s.maxDepth}
	}
	for i := range l.subdirs {
		if err := w.descend(r, fd, dev, path, rel, &l.subdirs[i], depth+1); err != nil {
			return err
		}
	}
	return nil
}

// descend searches the subdirectory sd of dirfd (on device dev, at parent,
// parentRel below root r): answered by one lstat when it can be
// (revalidate), else opened and visited. A name that vanished or is no
// longer a directory is skipped, as is, in a Shared root, a directory of
// another owner.
func (w *walk) descend(r *openedRoot, dirfd int, dev uint64, parent, parentRel string, sd *subdir, depth int) error {
	rel := sd.name
	if parentRel != "" {
		rel = parentRel + "/" + sd.name
	}
	if done, err := w.revalidate(r, dirfd, dev, parent, rel, sd, depth); done || err != nil {
		return err
	}
	path := filepath.Join(parent, sd.name)
	fd, err := openat(dirfd, sd.name, dirFlags)
	if err != nil {
		if vanished(err) || (r.Shared && !ownedDir(dirfd, sd.name, r.Owner)) {
			return nil
		}
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if r.Shared && int(st.Uid) != r.Owner {
		return nil
	}
	return w.visit(r, fd, &st, path, rel, depth)
}

// revalidate tries to answer the subdirectory sd of dirfd (on device dev, at
// parent, rel below root r) without opening it: by one lstat relative to
// dirfd (never following a symlink), which must show a directory (of Owner,
// in a Shared root) whose cached listing is fresh for that identity and
// those times and needs no descriptor (listing.needsFD). done is true when
// it was so answered, or when the lstat shows the name is gone or is no
// longer such a directory (skipped, as descend would). Otherwise the caller
// opens the directory and visits it, which stats it again from its
// descriptor: nothing the lstat saw is trusted then. The lstat is tried
// only when such a listing is cached for the inode the parent's reading
// listed (dirCache.cachedLeaf), a hint only: otherwise the directory is most
// likely opened anyway.
func (w *walk) revalidate(r *openedRoot, parentFD int, dev uint64, parent, rel string, sd *subdir, depth int) (bool, error) {
	if !w.s.cache.cachedLeaf(dirKey{dev: dev, ino: sd.ino, rel: rel, owner: r.owner}) {
		return false, nil
	}
	if err := w.ctx.Err(); err != nil {
		return false, fmt.Errorf("reading %s: %w", filepath.Join(parent, sd.name), err)
	}
	var st unix.Stat_t
	if err := fstatat(parentFD, sd.name, &st); err != nil {
		// Anything but a vanished name: the open decides, as for an
		// uncached directory.
		return vanished(err), nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || (r.Shared && int(st.Uid) != r.Owner) {
		return true, nil
	}
	// Watched again by path (a device and inode number once watched may
	// have been a removed directory's), then the name must still be that
	// directory: the watch is on what the name held when it was added.
	if !notify().watchPath(devIno{dirfd.Dev(&st), st.Ino}, filepath.Join(parent, sd.name)) {
		return false, nil // opened and visited: watched there
	}
	var again unix.Stat_t
	if err := fstatat(parentFD, sd.name, &again); err != nil || again.Dev != st.Dev || again.Ino != st.Ino {
		return false, nil
	}
	l, ok := w.s.cache.get(dirKey{dev: dirfd.Dev(&st), ino: st.Ino, rel: rel, owner: r.owner}, &st, w.seq)
	if !ok || l.needsFD() {
		return false, nil
	}
	w.used(&st)
	path := parent // only l's protected entries, and l itself when shaped like a repository, use the path
	if len(l.protected) > 0 || l.repo() {
		path = filepath.Join(parent, sd.name)
	}
	return true, w.use(r, -1, dirfd.Dev(&st), path, rel, depth, l)
}

// used records that the walk used the listing of the directory st.
func (w *walk) used(st *unix.Stat_t) {
	if w.dirs == nil {
		w.dirs = map[devIno]struct{}{}
	}
	w.dirs[devIno{dirfd.Dev(st), st.Ino}] = struct{}{}
}

// ownedDir reports whether name in dirfd is, by lstat, a directory of owner.
func ownedDir(dirfd int, name string, owner int) bool {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == owner
}

// read reads the directory fd (stat st) at path, rel below root r, in
// batches of the scan's buffer, and returns what it holds.
func (w *walk) read(r *openedRoot, fd int, st *unix.Stat_t, path, rel string) (*listing, error) {
	if w.buf == nil {
		w.buf = make([]byte, direntBufBytes)
	}
	l := &listing{mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), readAt: w.readAt, ino: st.Ino}
	w.rel = append(w.rel[:0], rel...)
	if rel != "" {
		w.rel = append(w.rel, '/')
	}
	base := len(w.rel)
	ownDir := !r.Shared || int(st.Uid) == r.Owner
	for {
		if err := w.ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		n, err := getdents(fd, w.buf)
		if errors.Is(err, unix.ENOENT) {
			// Removed since it was opened (a placeholder another command
			// let go, a build's scratch directory): it holds nothing.
			return l, nil
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return l, nil
		}
		rest := w.buf[:n]
		for {
			d, next, ok, err := nextDirent(rest, path)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			rest = next
			if skipDirent(&d) {
				continue
			}
			if err := w.entry(r, fd, path, l, &d, base, ownDir); err != nil {
				return nil, err
			}
		}
	}
}

// entry takes one record d of the directory dirfd at path into l: a
// protected entry (not a symlink) with its identity, a subdirectory by name,
// anything else only counted. In a Shared root an entry of another owner is
// neither taken nor counted, and an entry whose owner is not looked up (one
// neither protected nor a directory) is counted only in a directory of Owner
// (ownDir). w.rel[:base] is the directory's rel and a slash.
func (w *walk) entry(r *openedRoot, parentFD int, path string, l *listing, d *dirent, base int, ownDir bool) error {
	var st unix.Stat_t
	typ, stated := d.typ, false
	if typ == unix.DT_UNKNOWN {
		if err := unix.Fstatat(parentFD, string(d.name), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if vanished(err) {
				return nil
			}
			return &os.PathError{Op: "lstat", Path: filepath.Join(path, string(d.name)), Err: err}
		}
		typ, stated = direntType(&st), true
	}
	mark(l, d.name, typ)
	w.rel = append(w.rel[:base], d.name...)
	isDir := typ == unix.DT_DIR
	protected := typ == unix.DT_SOCK
	if !w.s.sockets {
		// rel aliases w.rel, reused for the next entry: Match's contract.
		protected = w.match(unsafe.String(&w.rel[0], len(w.rel)), isDir)
	}
	if !protected && !isDir {
		if r.Shared && !ownDir { // maybe another user's: not counted
			return nil
		}
		return w.count(path)
	}
	name := string(d.name)
	if !protected && !r.Shared {
		l.subdirs = append(l.subdirs, subdir{name: name, ino: d.ino})
		return w.count(path)
	}
	// A protected entry, or a directory in a Shared root: its identity or
	// its owner counts.
	if !stated {
		if err := unix.Fstatat(parentFD, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if vanished(err) {
				return nil
			}
			return &os.PathError{Op: "lstat", Path: filepath.Join(path, name), Err: err}
		}
		typ = direntType(&st)
	}
	if r.Shared && int(st.Uid) != r.Owner {
		return nil
	}
	if err := w.count(path); err != nil {
		return err
	}
	switch {
	case protected && typ != unix.DT_LNK && placeholderIn(parentFD, name, &st):
		// A runner's placeholder holds nothing and is no finding: the
		// runner reserves it again for each command.
	case protected:
		// A symlink too: as an entry when the scanner reports symlinks,
		// else for what it links to (protect, linkedEntries).
		l.protected = append(l.protected, found{name: name, dev: dirfd.Dev(&st), ino: st.Ino, uid: st.Uid, typ: typ})
	case !protected && typ == unix.DT_DIR:
		l.subdirs = append(l.subdirs, subdir{name: name, ino: st.Ino})
	}
	return nil
}

// mark notes in l a repository marker among its entries (name of type typ).
func mark(l *listing, name []byte, typ uint8) {
	switch string(name) {
	case "HEAD":
		if typ == unix.DT_REG {
			l.marks |= repoHEAD
		}
	case "commondir":
		if typ == unix.DT_REG {
			l.marks |= repoCommondir
		}
	case "objects":
		if typ == unix.DT_DIR {
			l.marks |= repoObjects
		}
	case "refs":
		if typ == unix.DT_DIR {
			l.marks |= repoRefs
		}
	}
}

// count counts one entry read from the directory at path against the
// budget.
func (w *walk) count(path string) error {
	w.entries++
	if w.entries > w.s.maxEntries {
		return &BudgetError{Dir: path, Entries: w.entries}
	}
	return nil
}

// protect records the protected entry f of the directory dirfd at path,
// and for a `.git` regular file the gitdir its first line names.
func (w *walk) protect(r *openedRoot, dirfd int, path string, f *found) error {
	p := filepath.Join(path, f.name)
	if f.typ == unix.DT_LNK && !w.s.symlinks {
		w.links[p] = true
		return nil
	}
	w.found[p] = Entry{Path: p, Dev: f.dev, Ino: f.ino, Dir: f.typ == unix.DT_DIR}
	if f.name == ".git" && f.typ == unix.DT_DIR {
		w.gitDirs[p] = true
	}
	if f.name != ".git" || f.typ != unix.DT_REG {
		return nil
	}
	target, ok, err := readPointer(dirfd, f.name, p, "gitdir: ", r.owner)
	if err != nil || !ok {
		return err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(path, target)
	}
	w.gitdirs = append(w.gitdirs, filepath.Clean(target))
	return nil
}

// getdents reads the next batch of records of fd into buf, retrying EINTR.
func getdents(fd int, buf []byte) (int, error) {
	for {
		n, err := sysGetdents(fd, buf)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// openat opens name in dirfd with flags, retrying EINTR.
func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// fstatat lstats name in dirfd into st, retrying EINTR.
func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// vanished reports whether err says an entry is gone or changed kind since
// it was listed: removed or renamed (ENOENT), or replaced by something that
// is not a directory (ENOTDIR) or by a symlink (ELOOP).
func vanished(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
}

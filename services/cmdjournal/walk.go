package cmdjournal

import (
	"errors"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/search"
	"github.com/dsh-go/harness/services/sandbox"
)

// Why an entry is outside a snapshot's scope.
const (
	skipGit       = ".git"
	skipDenyRead  = "deny-read"
	skipJournal   = "the journal itself"
	skipGitignore = "gitignored"
	skipSpecial   = "not a file, directory or symlink"
	skipSecret    = "a credential file name"
	skipTooLarge  = "over the journal cap"
)

// state is what a walk saw of one entry: lstat fields, and for a file the
// content's key once read (a symlink: its target).
type state struct {
	typ          string // journal.File, journal.Dir, journal.Symlink; "" for a skipped special file
	mode         uint32 // st_mode & 07777
	uid, gid     uint32
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
	ino, dev     uint64
	hash         string // a file's content key ("" until read)
	link         string // a symlink's target
}

// sameStat reports whether a and b have the same stat identity: type,
// size, mtime and ctime (ns), inode, device, mode and owner. A content
// change always moves ctime, so equal stats mean equal content, unless
// the change fell in the clock tick of the walk that saw a (racy).
func (a *state) sameStat(b *state) bool {
	return a.typ == b.typ && a.size == b.size && a.mtime == b.mtime && a.ctime == b.ctime &&
		a.ino == b.ino && a.dev == b.dev && a.mode == b.mode && a.uid == b.uid && a.gid == b.gid
}

// skipped is an entry a walk did not enter or read, with its own stat.
type skipped struct {
	st  state
	why string
}

// manifest is one walk of one root: every entry in scope by path relative
// to the root ("" is the root), the entries skipped, and when the walk
// started (ns since the epoch; every stat was taken after it, see racy).
type manifest struct {
	root    string
	entries map[string]*state
	skipped map[string]skipped
	start   int64
}

// racyWindow is how close to the moment of its stat (ns) an entry's ctime
// makes the stat untrustworthy: the kernel stamps times at its clock tick
// (up to 10 ms apart), so a change in the tick of the stat can leave the
// stat as it was.
const racyWindow = int64(50e6)

// racy reports whether st, as m saw it, may hide a later change of
// content: its ctime is within racyWindow of the walk's start or later
// (every stat was taken after the start, so this covers the moment of
// st's own stat, and every entry changed while the walk ran).
func (m *manifest) racy(st *state) bool { return st.ctime > m.start-racyWindow }

// contentFunc reads the content of the regular file fd (size bytes by its
// fstat) into the journal and returns its key.
type contentFunc func(fd int, size int64) (hash string, err error)

// walker walks one root, stat only, reading the content of a file only
// when prev does not already hold it under the same stat. Directories are
// walked by up to GOMAXPROCS goroutines; the results meet in m under mu,
// the contents go to the journal one at a time under cmu.
type walker struct {
	m       *manifest
	prev    *manifest // nil: read every file
	scope   scope
	content contentFunc

	mu   sync.Mutex // guards m's maps and err
	err  error
	cmu  sync.Mutex // serializes content
	sem  chan struct{}
	wg   sync.WaitGroup
	stop atomic.Bool
}

// scope is what a walk leaves out besides .git and gitignored paths: the
// deny-read set, credential file names at any depth (secrets), files
// larger than maxFile bytes (the journal's cap: they could not be kept),
// and the journal's own directory (were it inside a root, each snapshot
// would copy the journal into itself).
type scope struct {
	deny    sandbox.DenyRead
	secrets gitignore.Matcher
	maxFile int64
	journal string
}

// secretPatterns are the credential file names a walk never reads, at any
// depth of a root: the deny-read defaults anchored in a home ("~/.ssh",
// "~/.aws", "~/.npmrc", ...) with the "~/" stripped, plus "*.pem" and
// "*.key". The deny-read set names them only under a home directory; a
// workspace can hold copies.
func secretPatterns() gitignore.Matcher {
	var ps []gitignore.Pattern
	for _, d := range sandbox.DenyReadDefaults() {
		rel, ok := strings.CutPrefix(d, "~/")
		if !ok {
			continue
		}
		ps = append(ps, gitignore.ParsePattern("**/"+rel, nil))
	}
	for _, p := range []string{"*.pem", "*.key"} {
		ps = append(ps, gitignore.ParsePattern(p, nil))
	}
	return gitignore.NewMatcher(ps)
}

// walk returns the manifest of root (absolute, canonical). Errors: the
// root is in the deny-read set or in the journal, cannot be opened or is
// no directory; a content read fails.
func walk(root string, prev *manifest, sc scope, content contentFunc) (*manifest, error) {
	w := &walker{
		m:    &manifest{root: root, entries: map[string]*state{}, skipped: map[string]skipped{}, start: now()},
		prev: prev, scope: sc, content: content,
		sem: make(chan struct{}, max(runtime.GOMAXPROCS(0)-1, 0)),
	}
	if rule, denied := sc.deny.Denied(root, true); denied {
		return nil, errors.New("the workspace root " + root + " is in the deny-read set (" + rule + ")")
	}
	if root == sc.journal || dirfd.Beneath(sc.journal, root) {
		return nil, errors.New("the workspace root " + root + " is in the journal's directory " + sc.journal)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: root, Err: err}
	}
	w.m.entries[""] = fromStat(&st)
	ign, comps := search.AncestorIgnore(root)
	w.run(fd, "", comps, ign)
	w.wg.Wait()
	if w.err != nil {
		return nil, w.err
	}
	return w.m, nil
}

// sub walks the directory fd (which it closes) at rel: on a goroutine of
// its own when one is free, else on this one.
func (w *walker) sub(fd int, rel string, comps []string, ign []gitignore.Pattern) {
	select {
	case w.sem <- struct{}{}:
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer func() { <-w.sem }()
			w.run(fd, rel, comps, ign)
		}()
	default:
		w.run(fd, rel, comps, ign)
	}
}

// run walks the directory fd at rel and closes it; an error stops the walk.
func (w *walker) run(fd int, rel string, comps []string, ign []gitignore.Pattern) {
	defer func() { _ = unix.Close(fd) }()
	if w.stop.Load() {
		return
	}
	if err := w.dir(fd, rel, comps, ign); err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
		w.stop.Store(true)
	}
}

// dir walks the open directory fd at rel; comps is its path in the
// coordinates of the ignore patterns, ign the patterns that apply to it.
func (w *walker) dir(fd int, rel string, comps []string, ign []gitignore.Pattern) error {
	names, err := readNames(fd)
	if err != nil {
		return &os.PathError{Op: "readdir", Path: w.abs(rel), Err: err}
	}
	if rel == "" && len(comps) == 0 && slices.Contains(names, ".git") {
		ign = append(ign[:len(ign):len(ign)], w.ignoreFile(fd, ".git/info/exclude", nil)...)
	}
	if slices.Contains(names, ".gitignore") {
		ign = append(ign[:len(ign):len(ign)], w.ignoreFile(fd, ".gitignore", comps)...)
	}
	var m gitignore.Matcher
	if len(ign) > 0 {
		m = gitignore.NewMatcher(ign)
	}
	path := make([]string, len(comps)+1)
	copy(path, comps)
	entries := make(map[string]*state, len(names))
	skips := map[string]skipped{}
	for _, name := range names {
		sub := join(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // gone since the listing
			}
			return &os.PathError{Op: "lstat", Path: w.abs(sub), Err: err}
		}
		s := fromStat(&st)
		isDir := s.typ == dirType
		path[len(comps)] = name
		switch {
		case name == ".git":
			skips[sub] = skipped{*s, skipGit}
			continue
		case w.denied(sub, isDir):
			skips[sub] = skipped{*s, skipDenyRead}
			continue
		case w.scope.secrets.Match(strings.Split(sub, "/"), isDir):
			skips[sub] = skipped{*s, skipSecret}
			continue
		case s.typ == fileType && s.size > w.scope.maxFile:
			skips[sub] = skipped{*s, skipTooLarge}
			continue
		case isDir && w.abs(sub) == w.scope.journal:
			skips[sub] = skipped{*s, skipJournal}
			continue
		case m != nil && m.Match(path, isDir):
			skips[sub] = skipped{*s, skipGitignore}
			continue
		case s.typ == "":
			skips[sub] = skipped{*s, skipSpecial}
			continue
		}
		switch s.typ {
		case dirType:
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return &os.PathError{Op: "open", Path: w.abs(sub), Err: err}
			}
			entries[sub] = s
			w.sub(cfd, sub, slices.Clone(path), ign)
		case symlinkType:
			if err := w.readLink(fd, name, sub, s); err != nil {
				return err
			}
			entries[sub] = s
		case fileType:
			ok, err := w.file(fd, name, sub, s)
			switch {
			case err != nil:
				return err
			case ok:
				entries[sub] = s
			case s.typ == fileType && s.size > w.scope.maxFile:
				skips[sub] = skipped{*s, skipTooLarge} // grew since the listing
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	maps.Copy(w.m.entries, entries)
	maps.Copy(w.m.skipped, skips)
	return nil
}

// denied reports whether the entry rel (its parent in scope) is in the
// deny-read set.
func (w *walker) denied(rel string, isDir bool) bool {
	_, denied := w.scope.deny.DeniedEntry(w.abs(rel), isDir)
	return denied
}

// readLink fills s.link, from prev when the stat is unchanged.
func (w *walker) readLink(fd int, name, rel string, s *state) error {
	if p := w.known(rel, s); p != nil {
		s.link = p.link
		return nil
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, name, buf)
	if err != nil {
		return &os.PathError{Op: "readlink", Path: w.abs(rel), Err: err}
	}
	s.link = string(buf[:n])
	return nil
}

// file fills s.hash, from prev when the stat is unchanged, else by reading
// the file into the journal; ok is false when it is gone, no longer a
// file, or now larger than the cap (not read: s holds its stat).
func (w *walker) file(fd int, name, rel string, s *state) (ok bool, err error) {
	if p := w.known(rel, s); p != nil && p.hash != "" {
		s.hash = p.hash
		return true, nil
	}
	ffd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
			return false, nil // gone, or replaced by a symlink, since the listing
		}
		return false, &os.PathError{Op: "open", Path: w.abs(rel), Err: err}
	}
	defer func() { _ = unix.Close(ffd) }()
	var st unix.Stat_t
	if err := unix.Fstat(ffd, &st); err != nil {
		return false, &os.PathError{Op: "fstat", Path: w.abs(rel), Err: err}
	}
	*s = *fromStat(&st) // what is read is this inode
	if s.typ != fileType || s.size > w.scope.maxFile {
		return false, nil // replaced or grown since the listing
	}
	w.cmu.Lock()
	hash, err := w.content(ffd, s.size)
	w.cmu.Unlock()
	if err != nil {
		return false, &os.PathError{Op: "read", Path: w.abs(rel), Err: err}
	}
	s.hash = hash
	return true, nil
}

// known returns prev's state of rel when it is the same entry with the
// same stat and its content is known (not racy), else nil.
func (w *walker) known(rel string, s *state) *state {
	if w.prev == nil {
		return nil
	}
	p := w.prev.entries[rel]
	if p == nil || !p.sameStat(s) || w.prev.racy(p) {
		return nil
	}
	return p
}

// ignoreFile reads the ignore file rel beneath fd (a regular file, no
// symlink followed); one that cannot be read contributes nothing.
func (w *walker) ignoreFile(fd int, rel string, domain []string) []gitignore.Pattern {
	ffd, err := openBeneath(fd, rel)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(ffd), rel)
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	ps, _ := search.ParseIgnore(f, domain)
	return ps
}

// openBeneath opens rel beneath the directory fd for reading, following
// no symlink.
func openBeneath(fd int, rel string) (int, error) {
	return dirfd.OpenAt(fd, rel, unix.O_RDONLY|unix.O_NONBLOCK)
}

// readNames lists the directory fd in byte order (without "." and "..").
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// abs returns the absolute path of rel beneath the walk's root.
func (w *walker) abs(rel string) string { return joinAbs(w.m.root, rel) }

// joinAbs returns the absolute path of rel ("" for root) beneath root.
func joinAbs(root, rel string) string {
	if rel == "" {
		return root
	}
	return strings.TrimSuffix(root, "/") + "/" + rel
}

// join appends name to the slash-separated relative path rel.
func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

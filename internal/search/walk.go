package search

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fsuser"
)

// DefaultMaxEntries is the number of entries (files and directories) a walk
// examines when WalkOptions.MaxEntries is zero: it bounds the time and memory
// of a search started high in the tree (a walk of "/" stops there).
const DefaultMaxEntries = 1_000_000

// MaxProblems is the number of problems a walk keeps; later ones are counted
// in WalkStats.MoreProblems only.
const MaxProblems = 100

// readDirBatch is the number of directory entries read per getdents round, so
// that a huge directory is cut at the entry cap without listing it whole.
const readDirBatch = 1024

// gitDir is the version-control directory the walk never enters.
const gitDir = ".git"

// ErrNotDirectory is the problem recorded for a walk root that is not a
// directory.
var ErrNotDirectory = errors.New("not a directory")

// WalkOptions tunes a walk.
type WalkOptions struct {
	// Hidden includes entries whose name starts with "." (".git" stays
	// excluded).
	Hidden bool
	// NoIgnore disregards .gitignore files and .git/info/exclude.
	NoIgnore bool
	// MaxEntries caps the entries examined; zero means DefaultMaxEntries. A
	// walk that reaches it stops before the directory whose listing crossed
	// it and reports Truncated.
	MaxEntries int
	// Gate, when set, keeps the walk out of what must not be read (the
	// deny-read set, issue 24); nil refuses nothing.
	Gate Gate
	// As, when set, is the filesystem identity every goroutine a search
	// starts opens and reads under (fsuser.User.Do): a root server's
	// workspace owner (issue 35). The caller runs its own call under it;
	// nil leaves the process's.
	As *fsuser.User
}

// Gate decides what a walk may open. An entry the gate skips or refuses is
// counted in WalkStats.Denied (a refused walk root is ErrDenied instead).
type Gate interface {
	// Skip reports whether the entry at the absolute path abs (isDir: a
	// directory) must not be opened at all.
	Skip(abs string, isDir bool) bool
	// Refuse reports whether the open descriptor fd of the walk root, or of
	// the single file a grep searches, whose fstat is st, opened at the
	// absolute path abs, must not be read: the whole decision on what was
	// opened, not on its name.
	Refuse(fd int, st *unix.Stat_t, abs string) bool
	// RefuseEntry is Refuse for an entry beneath the walk root that Skip
	// passed (a directory about to be listed, a file about to be scanned):
	// it was opened beneath the root's handle without following a symlink
	// anywhere (dirfd.Dir.OpenReadFDNoSymlinks), and the walk decided each
	// directory on the way when it entered it, so abs is the descriptor's
	// path unless one of them was renamed since.
	RefuseEntry(fd int, st *unix.Stat_t, abs string) bool
}

// ErrDenied is the error of a walk root, or a file searched alone, that the
// gate refuses.
var ErrDenied = errors.New("in the deny-read set")

// Problem is one entry the walk could not read; the walk goes on without it.
type Problem struct {
	// Path is slash-separated and relative to the walk root ("" for the root).
	Path string
	// Err is the cause, an *os.PathError or a *SyscallError as returned by
	// the open, stat or read that failed.
	Err error
}

// WalkStats describes a finished walk.
type WalkStats struct {
	// Files is the number of regular files the walk yielded.
	Files int
	// Truncated reports whether the walk stopped at MaxEntries.
	Truncated bool
	// Denied counts the entries the gate skipped or refused.
	Denied int
	// Problems are the first MaxProblems entries that could not be read.
	Problems []Problem
	// MoreProblems counts the problems beyond Problems.
	MoreProblems int
}

// Entry is one regular file found by a walk. It is valid only during the
// callback that receives it.
type Entry struct {
	// Rel is the slash-separated path of the file relative to the walk root.
	Rel string
	// Name is the last element of Rel.
	Name string
	dir  *os.File // the open directory that holds the entry
}

// ModTime returns the file's modification time, read with fstatat on the
// directory the walk holds open (the final symlink is not followed). Errors:
// *os.PathError.
func (e Entry) ModTime() (time.Time, error) {
	var st unix.Stat_t
	var serr error
	rc, err := e.dir.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			serr = unix.Fstatat(int(fd), e.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
		})
	}
	if err == nil {
		err = serr
	}
	if err != nil {
		return time.Time{}, &os.PathError{Op: "fstatat", Path: e.Rel, Err: err}
	}
	return time.Unix(st.Mtim.Unix()), nil
}

// errStop ends a walk early without an error; Walk's callers use it.
var errStop = errors.New("search: stop")

// Walk calls fn, in depth-first byte order of names, for every regular file
// beneath the directory root (an absolute canonical path, no symlink in it).
// Directories and files matched by the .gitignore files of the tree and of its
// ancestors up to the enclosing repository, and by .git/info/exclude, are
// skipped unless opts.NoIgnore; names starting with "." are skipped unless
// opts.Hidden; ".git" and symlinks are always skipped. An entry that cannot be
// read is recorded in WalkStats.Problems and skipped. An error returned by fn
// ends the walk and is returned; so is the context's error when it is
// cancelled. Errors: *os.PathError when root cannot be opened.
func Walk(ctx context.Context, root string, opts WalkOptions, fn func(Entry) error) (WalkStats, error) {
	d, err := dirfd.OpenBeneath(root)
	if err != nil {
		return WalkStats{}, err
	}
	defer func() { _ = d.Close() }()
	return walkDir(ctx, d, root, opts, fn)
}

// walkDir runs a walk over the open root handle d whose path is root.
func walkDir(ctx context.Context, d *dirfd.Dir, root string, opts WalkOptions, fn func(Entry) error) (WalkStats, error) {
	w := &walker{ctx: ctx, root: d, opts: opts, fn: fn, seen: map[devIno]struct{}{}}
	if w.opts.MaxEntries <= 0 {
		w.opts.MaxEntries = DefaultMaxEntries
	}
	var ign []gitignore.Pattern
	var base []string
	if !opts.NoIgnore {
		ign, base = ancestorPatterns(root)
	}
	err := w.dir("", base, ign)
	if errors.Is(err, errStop) {
		err = nil
	}
	return w.stats, err
}

type devIno struct{ dev, ino uint64 }

type walker struct {
	ctx     context.Context
	root    *dirfd.Dir
	opts    WalkOptions
	fn      func(Entry) error
	seen    map[devIno]struct{}
	entries int
	stats   WalkStats
}

func (w *walker) problem(rel string, err error) {
	if len(w.stats.Problems) < MaxProblems {
		w.stats.Problems = append(w.stats.Problems, Problem{Path: rel, Err: err})
		return
	}
	w.stats.MoreProblems++
}

// refused reports whether the gate (none: false) refuses the directory rel
// the walk opened as fd: the walk root by Gate.Refuse, an entry beneath it
// by Gate.RefuseEntry.
func (w *walker) refused(fd int, st *unix.Stat_t, rel string) bool {
	switch {
	case w.opts.Gate == nil:
		return false
	case rel == "":
		return w.opts.Gate.Refuse(fd, st, w.abs(rel))
	default:
		return w.opts.Gate.RefuseEntry(fd, st, w.abs(rel))
	}
}

// dir walks the directory rel; comps is its path in the coordinates of the
// ignore patterns (relative to the repository root), ign the patterns that
// apply to it, in ascending priority.
func (w *walker) dir(rel string, comps []string, ign []gitignore.Pattern) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	fd, st, err := w.root.OpenReadFDNoSymlinks(rel)
	if err != nil {
		w.problem(rel, err)
		return nil
	}
	// An *os.File for its ReadDir; the poller refuses a directory.
	f := os.NewFile(uintptr(fd), path.Join(w.root.Path(), rel))
	defer func() { _ = f.Close() }()
	if !dirfd.IsDir(&st) {
		w.problem(rel, &os.PathError{Op: "walk", Path: f.Name(), Err: ErrNotDirectory})
		return nil
	}
	if w.refused(fd, &st, rel) {
		if rel == "" {
			return &os.PathError{Op: "walk", Path: f.Name(), Err: ErrDenied}
		}
		w.stats.Denied++
		return nil
	}
	// A directory is visited once: a bind mount or a rename racing the walk
	// cannot make it loop.
	key := devIno{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is uint64 on amd64 only
	if _, dup := w.seen[key]; dup {
		return nil
	}
	w.seen[key] = struct{}{}

	names, err := w.readDir(f)
	if w.stats.Truncated {
		// The listing was cut in the kernel's order, not by name: stop here
		// so the files yielded are the same from run to run.
		return errStop
	}
	if err != nil {
		w.problem(rel, err)
	}
	if !w.opts.NoIgnore {
		if rel == "" && len(comps) == 0 && has(names, gitDir, unix.DT_DIR) {
			// The walk root is a repository root: its exclude file applies
			// first, below every .gitignore.
			ign = append(ign[:len(ign):len(ign)], w.readIgnore(gitDir+"/info/exclude", nil)...)
		}
		if has(names, ".gitignore", unix.DT_REG) {
			ign = append(ign[:len(ign):len(ign)], w.readIgnore(join(rel, ".gitignore"), comps)...)
		}
	}
	var m gitignore.Matcher
	if len(ign) > 0 {
		m = gitignore.NewMatcher(ign)
	}
	// path is the entry's path in pattern coordinates; a child directory's
	// walk reads it before the next entry overwrites its last element.
	path := make([]string, len(comps)+1)
	copy(path, comps)
	for _, e := range names {
		if e.name == gitDir || (!w.opts.Hidden && e.name[0] == '.') {
			continue
		}
		isDir := e.typ == unix.DT_DIR
		if e.typ != unix.DT_REG && !isDir {
			continue // symlinks, FIFOs, sockets, devices
		}
		path[len(comps)] = e.name
		if m != nil && m.Match(path, isDir) {
			continue
		}
		sub := join(rel, e.name)
		if w.opts.Gate != nil && w.opts.Gate.Skip(w.abs(sub), isDir) {
			w.stats.Denied++
			continue
		}
		if isDir {
			if err := w.dir(sub, path, ign); err != nil {
				return err
			}
			continue
		}
		w.stats.Files++
		if err := w.fn(Entry{Rel: sub, Name: e.name, dir: f}); err != nil {
			return err
		}
	}
	return nil
}

// has reports whether the sorted names hold name with type typ.
func has(names []dirent, name string, typ uint8) bool {
	i, ok := slices.BinarySearchFunc(names, name, func(e dirent, n string) int { return strings.Compare(e.name, n) })
	return ok && names[i].typ == typ
}

type dirent struct {
	name string
	typ  uint8 // unix.DT_*
}

// readDir lists f in byte order of names, counting the entries against the
// cap. It asks for the type with lstat when the filesystem does not report it.
func (w *walker) readDir(f *os.File) ([]dirent, error) {
	var out []dirent
	for {
		batch, err := f.ReadDir(readDirBatch)
		for _, e := range batch {
			if w.entries >= w.opts.MaxEntries {
				w.stats.Truncated = true
				break
			}
			w.entries++
			out = append(out, dirent{name: e.Name(), typ: direntType(e.Type())})
		}
		if w.stats.Truncated || errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			slices.SortFunc(out, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
			return out, err
		}
	}
	slices.SortFunc(out, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// direntType maps a directory entry's mode type (which os.File.ReadDir fills
// from d_type, falling back to lstat) to a DT_* value.
func direntType(m os.FileMode) uint8 {
	switch {
	case m.IsRegular():
		return unix.DT_REG
	case m.IsDir():
		return unix.DT_DIR
	case m&os.ModeSymlink != 0:
		return unix.DT_LNK
	default:
		return unix.DT_UNKNOWN
	}
}

// abs returns the absolute path of rel beneath the walk root.
func (w *walker) abs(rel string) string { return joinAbs(w.root.Path(), rel) }

// joinAbs returns the absolute path of rel ("" for root) beneath root.
func joinAbs(root, rel string) string {
	switch {
	case rel == "":
		return root
	case root == "/":
		return "/" + rel
	}
	return root + "/" + rel
}

// join appends name to the slash-separated relative path rel.
func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// readIgnore reads the ignore file rel beneath the walk root, its patterns
// anchored at domain. A file that cannot be read is a problem, not an error.
func (w *walker) readIgnore(rel string, domain []string) []gitignore.Pattern {
	f, st, err := w.root.OpenRead(rel)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			w.problem(rel, err)
		}
		return nil
	}
	defer func() { _ = f.Close() }()
	if !dirfd.IsRegular(&st) {
		return nil
	}
	ps, err := parseIgnore(f, domain)
	if err != nil {
		w.problem(rel, err)
	}
	return ps
}

// maxIgnoreFileBytes bounds the bytes read from one ignore file.
const maxIgnoreFileBytes = 1 << 20

// parseIgnore parses gitignore lines from r (at most maxIgnoreFileBytes):
// blank lines and comments are skipped, a CR before the newline dropped.
func parseIgnore(r io.Reader, domain []string) ([]gitignore.Pattern, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxIgnoreFileBytes))
	var ps []gitignore.Pattern
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps, err
}

// ancestorPatterns returns the ignore patterns that apply to the directory
// root from outside it, and root's path relative to the enclosing repository
// as components. Outside a repository (no ".git" in root or an ancestor) it
// returns nil, nil: only the tree's own .gitignore files apply. Ancestors are
// read through safe opens; one that cannot be read contributes nothing.
func ancestorPatterns(root string) ([]gitignore.Pattern, []string) {
	repo := ""
	for dir := root; ; dir = path.Dir(dir) {
		if _, err := os.Lstat(path.Join(dir, gitDir)); err == nil {
			repo = dir
			break
		}
		if dir == "/" {
			return nil, nil
		}
	}
	if repo == root {
		return nil, nil // the walk reads the root's own files
	}
	comps := strings.Split(strings.TrimPrefix(root, strings.TrimSuffix(repo, "/")+"/"), "/")
	host := dirfd.Host()
	read := func(abs string, domain []string) []gitignore.Pattern {
		f, st, err := host.OpenRead(strings.TrimPrefix(abs, "/"))
		if err != nil {
			return nil
		}
		defer func() { _ = f.Close() }()
		if !dirfd.IsRegular(&st) {
			return nil
		}
		ps, _ := parseIgnore(f, domain)
		return ps
	}
	ps := read(path.Join(repo, gitDir, "info", "exclude"), nil)
	for i := range comps {
		dir := path.Join(append([]string{repo}, comps[:i]...)...)
		ps = append(ps, read(path.Join(dir, ".gitignore"), comps[:i])...)
	}
	return ps, comps
}

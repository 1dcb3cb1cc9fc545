package protectscan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-go/harness/internal/dirwatch"
)

// Defaults of Options.
const (
	// DefaultMaxEntries is the entry budget of a scan when
	// Options.MaxEntries is 0.
	DefaultMaxEntries = 2_000_000
	// DefaultMaxDepth is the depth limit when Options.MaxDepth is 0.
	DefaultMaxDepth = 64
)

// Root is one writable root to search.
type Root struct {
	// Path is the root's canonical absolute directory (no symlink in it).
	Path string
	// Shared marks a temp area other users write to (/tmp): directories not
	// owned by Owner are not entered, and entries not owned by Owner are
	// ignored. Only Owner's entries count against the budget: its
	// directories and protected entries, and every entry of its
	// directories.
	Shared bool
	// Owner is the uid whose entries count in a Shared root (the uid
	// commands run as). It is unused outside a Shared root.
	Owner int
}

// Entry is one protected path found.
type Entry struct {
	// Path is the entry's absolute path, the root's path joined with the
	// names read on the way down.
	Path string
	// Dev and Ino are the entry's identity when the scan found it (lstat),
	// so the command's stage can verify a bind mount covers exactly it.
	Dev, Ino uint64
	// Dir tells a directory; any other entry is a regular file, a FIFO, a
	// socket or a device (a symlink is never an entry).
	Dir bool
	// Split marks a git directory shaped like a repository whose
	// read-only members are listed as entries of their own
	// (Options.SplitGit): the directory itself is protected (not to be
	// removed, renamed or replaced), what it holds is not, but for those
	// members.
	Split bool
	// Missing marks a read-only member of a split git directory that does
	// not exist (Dev and Ino are 0): a command must not be able to create
	// it. Dir tells what git would make there.
	Missing bool
	// Placeholder is what a member file's placeholder (made for it when
	// Missing, or found made by another command) must hold to mean
	// to git what its absence means: "" but for a commondir, ".\n" (the
	// directory itself; git refuses an empty one).
	Placeholder string
	// Via, when set, is the member of a git directory that is a symlink
	// to this entry (a `.git/hooks` linked into the tree): the entry is
	// protected as that member is, wherever it lies in a root.
	Via string
}

// Match reports whether rel, a clean slash-separated path relative to its
// root (never "" or "."), is protected; isDir tells a directory. rel is only
// valid during the call: its bytes are reused afterwards, so a Match that
// keeps it must copy it (strings.Clone). Match must be safe for concurrent
// use when Scans run concurrently, and must answer the same for the same
// arguments: the cache remembers its answers.
type Match func(rel string, isDir bool) bool

// Options bound a Scanner's scans.
type Options struct {
	// MaxEntries is how many entries a scan may read from directories not
	// answered from the cache (in a Shared root, only Owner's count; see
	// Root.Shared); 0 means DefaultMaxEntries. It bounds the work of one
	// call, not the size of the tree: a tree refused once may be accepted
	// by a later call that finds part of it cached (what it returns is then
	// complete all the same).
	MaxEntries int
	// MaxDepth is how many directory levels below a root a scan reads; a
	// deeper directory makes the scan fail. 0 means DefaultMaxDepth.
	MaxDepth int
	// SplitGit splits each git directory found that is shaped like a
	// repository (a `.git` directory, a bare repository, a gitdir or
	// commondir a `.git` file names) into its read-only members
	// (sandbox.GitMember's list: config, config.worktree, hooks/,
	// info/attributes, objects/info/alternates, commondir, gitdir,
	// remotes/, branches/, and those of the gitdirs below worktrees/ and
	// modules/), instead of listing it whole (Entry.Split, Entry.Missing).
	SplitGit bool
	// EnterRepositories searches a directory shaped like a git repository
	// like any other directory, instead of returning it as an entry and
	// not searching it: for a Match that protects names of its own, not
	// the version-control metadata (the deny-read walk), since any
	// directory can be given that shape.
	EnterRepositories bool
	// Symlinks reports a symlink Match protects as a protected entry too
	// (never followed): for the deny-read walk, where a `.env` that links
	// elsewhere is a path to hide (its caller hides the target).
	Symlinks bool
	// Sockets makes a scan find the socket files, by their directory
	// entry's type (an lstat where the filesystem gives none), instead of
	// asking Match (which may be nil): for the walk of the sockets to mask,
	// with no lstat of every file (issue 34).
	Sockets bool
}

// Scanner finds protected paths and caches the directories it read. It is
// safe for concurrent use. Its cache holds Match's answers, so a Scanner
// serves one predicate: give each distinct Match its own Scanner.
type Scanner struct {
	maxEntries int
	maxDepth   int
	splitGit   bool
	enterRepos bool
	symlinks   bool
	sockets    bool
	cache      *dirCache
	links      linkCache // linksIn's listings
	seq        atomic.Uint64

	// What is kept current (notify.go, memo.go), under mu.
	mu     sync.Mutex
	match  Match                // the predicate of the latest scan
	memos  map[string]*memo     // rootsKey -> reusable result
	active map[string]*scanning // the root sets being scanned
	epoch  uint64               // moves at each event that matters
	// walkOnly turns the kept results off: every scan walks (the cache's
	// own tests).
	walkOnly bool
}

// New returns a Scanner bounded by o, with an empty cache.
func New(o Options) *Scanner {
	s := &Scanner{
		maxEntries: o.MaxEntries, maxDepth: o.MaxDepth, splitGit: o.SplitGit,
		enterRepos: o.EnterRepositories, symlinks: o.Symlinks, sockets: o.Sockets, cache: newDirCache(),
		memos: map[string]*memo{}, active: map[string]*scanning{},
	}
	if s.maxEntries <= 0 {
		s.maxEntries = DefaultMaxEntries
	}
	if s.maxDepth <= 0 {
		s.maxDepth = DefaultMaxDepth
	}
	return s
}

// Scan returns the protected entries that exist inside roots, sorted by path
// and each listed once: every entry match protects (topmost only: a
// protected directory is not searched), and for a `.git` regular file the
// directory its "gitdir:" line names and that gitdir's commondir, each when
// it is a real directory inside one of roots. Match must protect the
// version-control metadata names itself; Scan recognizes `.git` files only
// among the entries match protected. With Options.Sockets, match may be
// nil: the entries are the socket files.
//
// Scan fails closed: on any error it returns no entries. Errors are
// *BudgetError, *VanishedError (Options.FailVanished), ctx's error wrapped
// with the directory being read, or another error naming the directory or
// file that could not be read. Without Options.FailVanished an entry or
// directory that vanishes or turns into a symlink during the scan is
// skipped.
func (s *Scanner) Scan(ctx context.Context, roots []Root, match Match) ([]Entry, error) {
	out, _, err := s.scan(ctx, roots, match)
	return out, err
}

// scan is Scan that also returns how many entries it read from uncached
// directories.
func (s *Scanner) scan(ctx context.Context, roots []Root, match Match) ([]Entry, int, error) {
	w, out, err := s.scanWalk(ctx, roots, match)
	if w == nil {
		return out, 0, err
	}
	return out, w.entries, err
}

// scanWalk is Scan that also returns its walk (nil when the arguments were
// refused before it began).
func (s *Scanner) scanWalk(ctx context.Context, roots []Root, match Match) (*walk, []Entry, error) {
	if match == nil && !s.sockets {
		return nil, nil, errors.New("protected-path scan: no match predicate")
	}
	for _, r := range roots {
		if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
			return nil, nil, fmt.Errorf("protected-path scan: root %q is not a clean absolute path", r.Path)
		}
	}
	w := &walk{
		s:       s,
		ctx:     ctx,
		match:   match,
		seq:     s.seq.Add(1),
		readAt:  time.Now().UnixNano(),
		found:   map[string]Entry{},
		gitDirs: map[string]bool{},
		links:   map[string]bool{},
	}
	defer w.close()
	var err error
	if s.walkOnly {
		err = w.run(roots, func() {})
	} else {
		key := rootsKey(roots)
		s.awaitWalk(ctx, key)
		// Read before the walk: a mount made during it differs at the next
		// scan. A mount raises no inotify event.
		w.mounts = dirwatch.MountTable()
		kept, epoch := s.reusable(key, roots, match)
		if kept != nil && (w.mounts == nil || !bytes.Equal(kept.mounts, w.mounts)) {
			kept = nil
		}
		if kept != nil {
			w.reused = true
			err = w.reuse(roots, kept)
		}
		if kept == nil || errors.Is(err, errRootReplaced) {
			w.close()
			w.reused = false
			end := s.walking(key)
			err = w.run(roots, func() { s.keep(key, w, epoch) })
			end()
		}
		s.done(key)
	}
	if err != nil {
		if be, ok := errors.AsType[*BudgetError](err); ok {
			return w, nil, be
		}
		return w, nil, fmt.Errorf("protected-path scan: %w", err)
	}
	out := make([]Entry, 0, len(w.found))
	for _, e := range w.found {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return w, out, nil
}

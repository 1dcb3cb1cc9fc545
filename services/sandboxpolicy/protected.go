package sandboxpolicy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/services/sandbox"
)

// protectedSearchTimeout bounds the search of one mutation's decision
// (Protection) when its caller gives no deadline of its own: a scan of
// trees within the entry budget (protectscan.DefaultMaxEntries) ends well
// before it, so reaching it means the search is stuck, and the mutation is
// refused.
const protectedSearchTimeout = 30 * time.Second

// ProtectedEntry is one protected path that exists inside a writable root:
// version-control metadata (`.git`, `.hg`, `.jj`, `.svn`) at any depth, a
// --protect match, a directory shaped like a git repository (a bare one, a
// gitdir kept apart), or a gitdir a `.git` file in a writable root names
// and that gitdir's commondir.
type ProtectedEntry struct {
	// Path is the entry's absolute path, its root joined with the names
	// read on the way down (no symlink in it).
	Path string
	// Dev and Ino are the entry's identity when the search found it
	// (lstat), so an enforcer can check it covers exactly it.
	Dev, Ino uint64
	// Dir tells a directory (protected with everything beneath it, unless
	// Split).
	Dir bool
	// Split marks a git directory shaped like a repository under
	// sandbox.VCSCommit: the directory itself is protected (not to be
	// removed, renamed or replaced) but what it holds is writable, except
	// its read-only members (sandbox.GitMember), listed as entries of
	// their own.
	Split bool
	// Missing marks a read-only member of a split git directory that does
	// not exist (config.worktree, hooks/, info/attributes, ...; Dev and Ino
	// are 0): the runner reserves it so a command cannot create it. Dir
	// tells a directory.
	Missing bool
	// Placeholder is what the file the runner reserves a member with (a
	// Missing one, or one another command reserved) holds: "" but for a
	// commondir, ".\n", which names the git directory itself, as its
	// absence does (git refuses an empty one).
	Placeholder string
	// Via, when set, is the member of a git directory that is a symlink
	// to this entry (protectscan.Entry.Via): protected as that member is.
	Via string
}

// ProtectedEntries returns the protected entries that exist inside roots
// (canonical writable roots, as ExecutionPolicy.WritableRoots gives them; one that
// does not exist is skipped: it holds nothing), sorted by path, each listed
// once: what is protected by name or --protect pattern (the topmost entry
// only), every directory shaped like a git repository (setup.c
// is_git_directory: a HEAD file, and a commondir file or objects and refs
// directories), and the gitdir a `.git` file names and its commondir, each
// when it is a real directory inside one of roots (any of them: a `.git`
// file in the workspace protects a gitdir in another writable root), and
// harness's configuration file (Config.ConfigFile) when it lies in one of
// roots. Under sandbox.VCSCommit a git directory shaped like a repository
// is listed Split, followed by its read-only members (Missing for those a
// command must not create). In a
// temp root (TempRoots), shared with other users, only the entries of owner
// (a uid) count. No symlink is followed and nothing that could block is
// opened (internal/protectscan); unchanged directories are answered from
// the service's cache.
//
// It fails closed: a search it cannot finish (more entries or depth than
// its budget, ctx's deadline, a directory it cannot read) returns an error
// saying where it stopped and no entries, never a partial list.
func (s *Service) ProtectedEntries(ctx context.Context, roots []string, owner int) ([]ProtectedEntry, error) {
	scan := make([]protectscan.Root, 0, len(roots))
	for _, r := range roots {
		if _, err := os.Lstat(r); err != nil {
			continue // a missing root grants nothing and holds nothing
		}
		scan = append(scan, protectscan.Root{Path: r, Shared: slices.Contains(s.cfg.TempRoots, r), Owner: owner})
	}
	entries, err := s.scanner.Scan(ctx, scan, s.protect.ProtectedEntry)
	if err != nil {
		if _, ok := errors.AsType[*protectscan.BudgetError](err); ok ||
			errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("the search for protected paths did not finish: %w", err)
		}
		return nil, err
	}
	out := make([]ProtectedEntry, 0, len(entries)+1)
	for _, e := range entries {
		out = append(out, ProtectedEntry{Path: e.Path, Dev: e.Dev, Ino: e.Ino, Dir: e.Dir, Split: e.Split, Missing: e.Missing, Placeholder: e.Placeholder, Via: e.Via})
	}
	for _, f := range s.protect.Files() {
		if e, ok := configEntry(f, scan, s.protect.Executable(f)); ok && !slices.ContainsFunc(out, func(o ProtectedEntry) bool { return o.Path == e.Path }) {
			out = append(out, e)
		}
	}
	for _, d := range s.protect.HostRunDirs() {
		if e, ok := hostRunDirEntry(d, scan); ok && !slices.ContainsFunc(out, func(o ProtectedEntry) bool { return o.Path == e.Path }) {
			out = append(out, e)
		}
	}
	for _, e := range homeFileEntries(s.DenyRead().Homes(), s.protect.HostRun(), scan) {
		if !slices.ContainsFunc(out, func(o ProtectedEntry) bool { return o.Path == e.Path }) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b ProtectedEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// hostRunDirEntry returns the entry of the host-run directory d
// ($XDG_CONFIG_HOME/git) when it is a directory inside one of roots (of the
// root's Owner, in a Shared root), none of whose components is a symlink.
// Reached through a symlink (a `~/.config` linked into a dotfiles tree, as
// stow folds it), it is what d resolves to that is protected, when that
// lies in one of roots, with Via d (the attack review: both families wrote
// the linked git config).
func hostRunDirEntry(d string, roots []protectscan.Root) (ProtectedEntry, bool) {
	for _, r := range roots {
		if !dirfd.Beneath(r.Path, d) || d == r.Path {
			continue
		}
		st, err := dirfd.StatNoSymlinks(d)
		if errors.Is(err, unix.ELOOP) {
			return linkedEntry(d, roots, true)
		}
		if err != nil || !dirfd.IsDir(&st) || (r.Shared && int(st.Uid) != r.Owner) {
			return ProtectedEntry{}, false
		}
		return ProtectedEntry{Path: d, Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: true}, true
	}
	// A home out of the roots whose `.config` links into one (the
	// workspace is ~/dotfiles: the review's input).
	return linkedEntry(d, roots, true)
}

// linkedEntry is hostRunDirEntry of d reached through a symlink, or, not
// dir, a home's host-run file reached so (homeFileEntries): the directory
// or regular file it resolves to (protectscan.ResolveLink), when that lies
// in one of roots (of the root's Owner, in a Shared root) and neither is
// nor holds a root.
func linkedEntry(d string, roots []protectscan.Root, dir bool) (ProtectedEntry, bool) {
	var st unix.Stat_t
	target, ok := protectscan.ResolveLink(d, &st)
	if !ok || target == d || (dir && !dirfd.IsDir(&st)) || (!dir && !dirfd.IsRegular(&st)) {
		return ProtectedEntry{}, false
	}
	for _, r := range roots {
		if dirfd.Beneath(target, r.Path) {
			return ProtectedEntry{}, false // is or holds a root
		}
	}
	for _, r := range roots {
		if dirfd.Beneath(r.Path, target) && (!r.Shared || int(st.Uid) == r.Owner) {
			return ProtectedEntry{Path: target, Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: dir, Via: d}, true
		}
	}
	return ProtectedEntry{}, false
}

// homeFileEntries returns, for each of homes that lies out of roots, what
// each of its host-run files (but the root-only ones) resolves to through
// a symlink into one of roots: `~/.bashrc -> ~/dotfiles/bashrc` with the
// workspace ~/dotfiles (the review's input: a command appended to both).
func homeFileEntries(homes []string, files []sandbox.HostRun, roots []protectscan.Root) []ProtectedEntry {
	var out []ProtectedEntry
	for _, h := range homes {
		if slices.ContainsFunc(roots, func(r protectscan.Root) bool { return dirfd.Beneath(r.Path, h) }) {
			continue // walked with its root
		}
		for _, f := range files {
			if f.Top || f.Dir {
				continue
			}
			if e, ok := linkedEntry(filepath.Join(h, f.Name), roots, false); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// configEntry returns the entry of the configuration file f (or, exe,
// harness's executable) when it is a regular file inside one of roots (of
// the root's Owner, in a Shared root, but for the executable, which no
// other user plants: whoever owns it, a command must not replace it), none
// of whose components is a symlink.
func configEntry(f string, roots []protectscan.Root, exe bool) (ProtectedEntry, bool) {
	for _, r := range roots {
		if !dirfd.Beneath(r.Path, f) || f == r.Path {
			continue
		}
		st, err := dirfd.StatNoSymlinks(f)
		if err != nil || !dirfd.IsRegular(&st) || (r.Shared && !exe && int(st.Uid) != r.Owner) {
			return ProtectedEntry{}, false
		}
		return ProtectedEntry{Path: f, Dev: dirfd.Dev(&st), Ino: st.Ino}, true
	}
	return ProtectedEntry{}, false
}

// Protection is the protected-path rule of one mutation under one policy:
// it answers for every entry the mutation reaches (a recursive delete asks
// for each entry beneath its target, twice) from one search of the
// writable roots, taken at its first need. It is safe for concurrent use.
type Protection struct {
	s      *Service
	roots  []string // the policy's WritableRoots
	search func() ([]ProtectedEntry, error)
	// homeLinks is where the host-run names of a home out of the roots
	// lead into one (homeLinksIn), resolved at its first need.
	homeLinks func() []string
}

// Protection returns the protected-path rule of a mutation under p (see
// Rule). Nothing is searched until a Rule needs it; the search runs under
// ctx or, when ctx has no deadline, protectedSearchTimeout.
func (s *Service) Protection(ctx context.Context, p sandbox.ExecutionPolicy) *Protection {
	roots := p.WritableRoots()
	homeLinks := sync.OnceValue(func() []string { return homeLinksIn(p, s.protect, s.DenyRead().Homes()) })
	return &Protection{s: s, roots: roots, homeLinks: homeLinks, search: sync.OnceValues(func() ([]ProtectedEntry, error) {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, protectedSearchTimeout)
			defer cancel()
		}
		return s.ProtectedEntries(ctx, roots, os.Geteuid())
	})}
}

// Rule decides whether a mutation of target (a clean absolute path,
// existing or not) is refused as a protected path, and returns the rule
// that protects it ("" when none does, or when target lies beneath none of
// the policy's writable roots: that is Boundary's question, not this one).
// It is the one rule the file fence (fssandbox) and the command runner
// (execsandbox, through ProtectedEntries) share:
//   - by name and pattern (sandbox.ProtectedPaths.Protected, relative to the
//     writable root target lies beneath): `.git` (under sandbox.VCSCommit
//     only its read-only members, sandbox.GitMember), `.hg`, `.jj`, `.svn`
//     at any depth, the host-run files and --protect matches, existing or
//     not, so a match created after the start is protected too;
//   - by what exists (ProtectedEntries over every writable root of the
//     policy, searched once per Protection): target is or lies in a
//     protected entry: a directory shaped like a git repository, or a
//     gitdir or commondir that a `.git` file names, the file in any
//     writable root of the policy; for a git directory split under
//     sandbox.VCSCommit, target is the directory itself or one of its
//     read-only members (sandbox.GitMember, relative to it).
//
// Besides, for the file tools alone (the command runner leaves them
// writable, so that git rebase, cherry-pick and revert work, and checks
// them when a command ends): git state that runs programs
// (sandbox.GitRunMember: rebase-merge/git-rebase-todo, rebase-merge/strategy,
// sequencer/opts, sequencer/todo and the directories on the way to them) in
// a `.git` met by name or a split git directory.
//
// Only workspace-write has protected paths. In a temp root only the entries
// of the process's effective uid count. Errors: the search's (see
// ProtectedEntries); the caller refuses the mutation then.
func (pr *Protection) Rule(target string) (string, error) {
	for _, root := range pr.roots {
		if !dirfd.Beneath(root, target) {
			continue
		}
		if pr.s.protect.ConfigFile(target) {
			return "harness's configuration file", nil
		}
		if pr.s.protect.Executable(target) {
			return "harness's executable: a client starts it again, unconfined", nil
		}
		if d, ok := pr.s.protect.HostRunDir(target); ok {
			return "host-run directory " + d + " ($XDG_CONFIG_HOME)", nil
		}
		for _, h := range pr.homeLinks() {
			if dirfd.Beneath(h, target) {
				return "where a home's host-run file or directory leads through a symlink: " + h, nil
			}
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(target, root), "/")
		if rule, ok := pr.s.protect.Protected(rel, false); ok {
			return rule, nil
		}
		if rule, ok := gitRunRule(rel); ok {
			return rule, nil
		}
		entries, err := pr.search()
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if !e.Split || !dirfd.Beneath(e.Path, target) {
				continue
			}
			member := strings.TrimPrefix(strings.TrimPrefix(target, e.Path), "/")
			var parts []string
			if member != "" {
				parts = strings.Split(member, "/")
			}
			if rule, ok := sandbox.GitMember(parts); ok {
				return rule + " of the git directory " + e.Path, nil
			}
			if rule, ok := sandbox.GitRunMember(parts); ok {
				return rule + " of the git directory " + e.Path, nil
			}
		}
		for _, e := range entries {
			if !e.Split && !e.Missing && (e.Path == target || (e.Dir && dirfd.Beneath(e.Path, target))) {
				if e.Via != "" {
					return "what the protected " + e.Via + " links to: " + e.Path, nil
				}
				return "a git repository directory: " + e.Path, nil
			}
		}
		return "", nil
	}
	return "", nil
}

// gitRunRule is the rule of rel (relative to a writable root) when it lies
// in a `.git` directory met by name and is git state that runs programs or
// a directory on the way to it (sandbox.GitRunMember).
func gitRunRule(rel string) (string, bool) {
	parts := strings.Split(rel, "/")
	i := slices.Index(parts, ".git")
	if i < 0 {
		return "", false
	}
	if rule, ok := sandbox.GitRunMember(parts[i+1:]); ok {
		return rule + " in .git", true
	}
	return "", false
}

// ProtectedAt is Protection(ctx, p).Rule(target): one decision, one search.
func (s *Service) ProtectedAt(ctx context.Context, p sandbox.ExecutionPolicy, target string) (string, error) {
	return s.Protection(ctx, p).Rule(target)
}

package fssandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/search"
	hfs "github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Limits of the identity snapshot of the deny-read set.
const (
	// identityTTL is how long a snapshot of the denied paths' identities
	// is reused. Only the identity checks use it: the path check is made
	// on every read, so a stale snapshot never lets through a path that
	// Denied names; it can only miss, for that long, a bind mount or hard
	// link of a credential created since.
	identityTTL = 2 * time.Second
	// maxAnchoredMatches bounds the paths one anchored pattern expands to
	// (a glob such as /home/*/.ssh lists /home); beyond it, the rest are
	// decided by their path alone.
	maxAnchoredMatches = 10_000
	// maxLinkedFiles bounds the regular files the hard-link index records
	// beneath each denied directory: credential stores are small, and the
	// index must not cost a walk of a large tree.
	maxLinkedFiles = 20_000
)

// devIno is a file's identity.
type devIno struct{ dev, ino uint64 }

func identity(st *unix.Stat_t) devIno { return devIno{uint64(st.Dev), st.Ino} } //nolint:unconvert // Dev is uint64 on amd64 only

// identities is one snapshot of the existing denied paths the anchored
// patterns without `**` name (sandbox.DenyRead.AnchoredRules): each
// denied directory and file by identity, with the rule that denies it.
// Taking it stats each such path and lists only the directories a
// pattern's wildcards choose among (`~/.cargo/credentials*` lists
// ~/.cargo), never a tree. The regular files beneath the denied
// directories (the hard-link index, links) are listed only when a file
// with more than one link on the filesystem of one of them is decided
// (linked).
type identities struct {
	dirs  map[devIno]string
	files map[devIno]string
	// paths are the paths whose change changedDenied refuses, with why:
	// each existing denied path, as the pattern's expansion spells it and
	// by its real path (symlinks resolved), and the literal base of each
	// anchored `**` pattern that exists (a move of it would carry every
	// match along).
	paths map[string]string
	// linkedDirs are the directories symlinks in a denied directory lead
	// to (linksOut), with why: what lies beneath one may not be changed
	// either.
	linkedDirs map[string]string
	// stores are the denied directories, listed by linked.
	stores []deniedDir
	taken  time.Time

	linksOnce sync.Once
	links     map[devIno]string
}

// deniedDir is an existing denied directory of a snapshot.
type deniedDir struct {
	path, rule string
	dev        uint64
}

// readFence decides every read of the file tools against the policy's
// deny-read set (issue 24), in every mode, on the opened descriptor: its
// real path (/proc/self/fd) must not be denied, and neither its identity
// nor that of any directory on its real path may be an existing anchored
// denied path's, so a symlink, "..", a bind mount of a denied directory or
// a hard link to a denied file made elsewhere does not reach it. A pattern
// at any depth (`.env`, `*.pem`) and an anchored one with `**` are decided
// by the path alone; none is ever expanded over a tree. The hard-link
// check (a regular file with more than one link) compares the file with
// the anchored denied files and the files beneath the anchored denied
// directories; what a symlink in an anchored denied directory leads to (a
// key linked into ~/.ssh from a dotfiles tree) is denied by identity
// (linksOut). It does not see files that merely hold a copy of a secret,
// a hard link to a file beyond maxLinkedFiles of its denied directory,
// nor a hard link to, or a bind mount of, what only a pattern at any depth
// or an anchored `**` pattern matches.
type readFence struct {
	deny  sandbox.DenyRead
	mode  sandbox.Mode // the deployment default, named by a refusal
	roots []string     // the default policy's writable roots (linksOut)
	homes []string     // the homes ~ stands for (linksOut)
	links protectscan.Links
	// trusted are the anchored denied directories that existed when the
	// fence was made (at start), by identity: only their links are
	// followed (linksOut).
	trusted map[devIno]bool
	// trusting is set while the first snapshot is taken (newReadFence):
	// record trusts each denied directory it meets.
	trusting bool
	// kept is the policy's store of what the deny-read links led to,
	// shared with the runner (keepLinked).
	kept *sandboxpolicy.LinkTargets

	mu   sync.Mutex // taken to replace snap
	snap atomic.Pointer[identities]
}

func newReadFence(policy *sandboxpolicy.Service) *readFence {
	r := &readFence{deny: policy.DenyRead(), mode: policy.Default().Mode, roots: policy.Default().Roots(), homes: policy.DenyRead().Homes(), trusted: map[devIno]bool{}, kept: policy.LinkTargets()}
	if !r.deny.Empty() {
		// The first snapshot now, before any call: the anchored denied
		// directories that exist now are trusted (record; one a command
		// makes later, `~/.kube` in a home workspace, is the agent's, and
		// so would be what its links name: the attack review linked one
		// to /usr and to another principal's workspace), and what their
		// links lead to is remembered (sandboxpolicy.LinkTargets) before
		// a call can change a link on the way.
		r.trusting = true
		r.identities()
		r.trusting = false
	}
	return r
}

// decide is the fence's Read (see fsbackend.Fence): the deny-read decision
// on fd. A target carrying an approval (fs.Target.ApproveRead) is let
// through when fd's real path is the approved one, refused with
// sandboxpolicy.CodeTargetChanged otherwise.
func (r *readFence) decide(target hfs.Target, op string, fd int, st *unix.Stat_t, entry bool) error {
	where, err := fdPath(fd)
	if err != nil {
		// Fail closed: a descriptor whose path cannot be read is not read.
		return r.refusal(target, op, string(target.Key), "its real path could not be read: "+err.Error())
	}
	if approved := target.ApprovedRead(); approved != "" {
		if where != approved {
			return sandboxpolicy.ReadTargetChanged(approved, where)
		}
		return nil
	}
	if r.deny.Empty() {
		return nil
	}
	if rule, ok := r.denied(where, st, entry); ok {
		return r.refusal(target, op, where, rule)
	}
	// The path as the caller named it: a `.env` that is a symlink to a
	// file elsewhere is as denied as the file it names.
	if dp := filepath.Clean(target.DisplayPath); filepath.IsAbs(dp) && dp != where {
		if rule, ok := r.namedDenied(dp, st, entry); ok {
			return r.refusal(target, op, where, rule)
		}
	}
	return nil
}

// namedDenied is denied's decision by path alone, for the path a caller
// named (where the file's real path differs from it: a symlink on the
// way).
func (r *readFence) namedDenied(named string, st *unix.Stat_t, entry bool) (string, bool) {
	if entry && dirfd.IsDir(st) {
		if parent := filepath.Dir(named); parent != named {
			return r.deny.Denied(parent, true)
		}
		return "", false
	}
	return r.deny.Denied(named, dirfd.IsDir(st))
}

// denied reports whether reading where (the descriptor's real path, whose
// fstat is st) is refused, and by which rule: where is denied (Denied
// matches its patterns against the path and each of its ancestors), or
// its identity, or that of a directory on it, is an existing denied
// path's. With entry, only the entry's own metadata is read: a denied
// directory itself passes, what lies inside it does not.
func (r *readFence) denied(where string, st *unix.Stat_t, entry bool) (string, bool) {
	isDir := dirfd.IsDir(st)
	parent := filepath.Dir(where)
	if entry && isDir {
		if rule, ok := r.deny.Denied(parent, true); ok && parent != where {
			return rule, true
		}
	} else if rule, ok := r.deny.Denied(where, isDir); ok {
		return rule, true
	}
	if rule, ok := r.identityDenied(st, entry); ok {
		return rule, true
	}
	// Every directory on the real path: a bind mount of a denied directory
	// has the directory's identity at its root.
	ids := r.identities()
	for dir := parent; ; dir = filepath.Dir(dir) {
		var dst unix.Stat_t
		if unix.Stat(dir, &dst) == nil {
			if rule, ok := ids.dirs[identity(&dst)]; ok {
				return rule, true
			}
		}
		if dir == "/" || dir == "." {
			return "", false
		}
	}
}

// identityDenied reports whether the file or directory of st is an existing
// denied path by identity (with entry, a directory's own identity is not
// checked: its metadata passes): a denied directory, a denied file, or,
// for a regular file with more than one link, a file beneath a denied
// directory (linked). It makes no system call but the hard-link index's.
func (r *readFence) identityDenied(st *unix.Stat_t, entry bool) (string, bool) {
	ids := r.identities()
	id := identity(st)
	switch {
	case entry && dirfd.IsDir(st):
	case dirfd.IsDir(st):
		if rule, ok := ids.dirs[id]; ok {
			return rule, true
		}
	default:
		if rule, ok := ids.files[id]; ok {
			return rule, true
		}
		if st.Nlink > 1 && dirfd.IsRegular(st) {
			if rule, ok := ids.linked(st); ok {
				return rule, true
			}
		}
	}
	return "", false
}

// identities returns a snapshot of the existing denied paths' identities,
// taken again once identityTTL has passed.
func (r *readFence) identities() *identities {
	if ids := r.snap.Load(); ids != nil && time.Since(ids.taken) < identityTTL {
		return ids
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ids := r.snap.Load(); ids != nil && time.Since(ids.taken) < identityTTL {
		return ids
	}
	ids := &identities{dirs: map[devIno]string{}, files: map[devIno]string{}, paths: map[string]string{}, linkedDirs: map[string]string{}, taken: time.Now()}
	for _, a := range r.deny.AnchoredRules() {
		if treePattern(a.Pattern) {
			// Decided by its path alone: its expansion is a walk of the
			// tree beneath its literal base.
			base, _ := doublestar.SplitPattern(a.Pattern)
			if _, err := os.Stat(base); err == nil {
				ids.paths[base] = a.Rule + ", which matches beneath " + base
				if resolved, err := filepath.EvalSymlinks(base); err == nil {
					ids.paths[resolved] = a.Rule + ", which matches beneath " + resolved
				}
			}
			continue
		}
		matches, err := doublestar.FilepathGlob(a.Pattern)
		if err != nil {
			continue // a malformed pattern matches nothing here; Denied still applies
		}
		for _, m := range matches[:min(len(matches), maxAnchoredMatches)] {
			r.record(ids, m)
		}
	}
	r.keepLinked(ids)
	r.snap.Store(ids)
	return ids
}

// keepLinked adds to ids each target of the deny-read links remembered in
// the policy's store (sandboxpolicy.LinkTargets: this fence's and the
// runner's finds) that is still what it was and that LinkedDenial accepts
// for the fence's roots: a chain of links that led to it changed since
// (a command re-pointed `current` in `~/.ssh/id -> ~/dotfiles/current ->
// keys/id`, then the read tool read the key once the snapshot expired:
// the attack review of issue 34) leaves it denied.
func (r *readFence) keepLinked(ids *identities) {
	r.kept.Current(func(p string, fi os.FileInfo, why string) {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !sandboxpolicy.LinkedDenial(p, r.roots, r.homes) {
			return
		}
		ids.addLinked(p, devIno{uint64(st.Dev), st.Ino}, fi.IsDir(), why) //nolint:unconvert // Dev is uint64 on amd64 only
	})
}

// addLinked records target, what a deny-read link leads to, of identity
// id, as denied for why: its path, and its identity as a file's or a
// directory's (a directory's path also in linkedDirs).
func (ids *identities) addLinked(target string, id devIno, dir bool, why string) {
	ids.paths[target] = why
	if dir {
		ids.dirs[id] = why
		ids.linkedDirs[target] = why
	} else {
		ids.files[id] = why
	}
}

// record adds the path m an anchored pattern matched to ids, unless it is
// gone or a later pattern exempts it.
func (r *readFence) record(ids *identities, m string) {
	var st unix.Stat_t
	// Followed: a denied path that is a symlink denies what it names,
	// wherever that is.
	if unix.Stat(m, &st) != nil {
		return
	}
	rule, ok := r.deny.Denied(m, dirfd.IsDir(&st))
	if !ok {
		return // exempted by a later pattern
	}
	ids.paths[m] = rule + ", " + m + " lies beneath it"
	if resolved, err := filepath.EvalSymlinks(m); err == nil {
		ids.paths[resolved] = rule + ", " + resolved + " lies beneath it"
	}
	same := rule + ", the same " + kind(&st) + " as " + m
	if !dirfd.IsDir(&st) {
		ids.files[identity(&st)] = same
		return
	}
	ids.dirs[identity(&st)] = same
	ids.stores = append(ids.stores, deniedDir{path: m, rule: rule, dev: uint64(st.Dev)}) //nolint:unconvert // Dev is uint64 on amd64 only
	if r.trusting {
		r.trusted[identity(&st)] = true
	}
	if r.trusted[identity(&st)] {
		r.linksOut(ids, m, rule)
	}
}

// maxLinkedOutEntries bounds the entries linksOut reads beneath each denied
// directory (credential stores are small), the runner's bound.
const maxLinkedOutEntries = 4096

// linksOut records, for each symlink in the denied directory dir (one of
// readFence.trusted: it existed when the fence was made) or beneath it (at
// most maxLinkedOutEntries entries read, shallowest first; a
// directory holding more than is left passed over, its siblings read),
// what it leads to: a key kept in a dotfiles tree and linked into ~/.ssh
// is, read through the link, the denied file, so its target is denied by
// identity wherever it lies, and its path may not be changed, as the
// runner masks it for commands (the attack review of issue 34 read one
// through the file tools). Only a target sandboxpolicy.LinkedDenial
// accepts (beneath a home or a writable root of the default policy,
// holding none: a link to /usr denied every command's shell) that does
// not lie in dir; not a link that leads nowhere. Each directory's listing is
// kept while it is unchanged (protectscan.Links): a snapshot taken again
// stats the directories, it does not list them again.
func (r *readFence) linksOut(ids *identities, dir, rule string) {
	at, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return
	}
	r.links.Beneath(at, maxLinkedOutEntries, func(link string) {
		var st unix.Stat_t
		target, ok := protectscan.ResolveLink(link, &st)
		if !ok || dirfd.Beneath(at, target) || !sandboxpolicy.LinkedDenial(target, r.roots, r.homes) {
			return
		}
		why := rule + ", " + target + " is what " + link + " links to"
		if fi, err := os.Lstat(target); err == nil {
			r.kept.Add(target, fi, why)
		}
		ids.addLinked(target, identity(&st), dirfd.IsDir(&st), why)
	})
}

// treePattern reports whether the anchored pattern p has a `**` component,
// which matches at any depth beneath its literal base.
func treePattern(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "**")
}

// linked reports whether the regular file of st, which has more than one
// link, is a file beneath a denied directory of the snapshot, and by which
// rule. A hard link never leaves its filesystem, so only a file on the
// filesystem of a denied directory is looked up; the first such file
// lists the denied directories (at most maxLinkedFiles regular files in
// each), once per snapshot.
func (ids *identities) linked(st *unix.Stat_t) (string, bool) {
	dev := uint64(st.Dev) //nolint:unconvert // Dev is uint64 on amd64 only
	if !slices.ContainsFunc(ids.stores, func(d deniedDir) bool { return d.dev == dev }) {
		return "", false
	}
	ids.linksOnce.Do(ids.indexLinks)
	rule, ok := ids.links[identity(st)]
	return rule, ok
}

// indexLinks records the regular files beneath the denied directories, at
// most maxLinkedFiles beneath each: the bound is each directory's own, so
// a large store listed first (gcloud's logs in ~/.config/gcloud) leaves the
// others indexed in full.
func (ids *identities) indexLinks() {
	ids.links = map[devIno]string{}
	errFull := errors.New("full")
	for _, d := range ids.stores {
		n := 0
		_ = filepath.WalkDir(d.path, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil //nolint:nilerr // an unreadable entry is skipped
			}
			if n++; n > maxLinkedFiles {
				return errFull
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil {
				return nil // removed since it was listed
			}
			ids.links[identity(&st)] = d.rule + ", a hard link to " + p
			return nil
		})
	}
}

func kind(st *unix.Stat_t) string {
	if dirfd.IsDir(st) {
		return "directory"
	}
	return "file"
}

// refusal is the error of a refused read: CodeReadDenied with the mode,
// `cannot <op> "<dp>": <real path> is in the deny-read set (<rule>)`, caused by
// an *fs.ReadDenial.
func (r *readFence) refusal(target hfs.Target, op, where, rule string) *hfs.Error {
	cause := &hfs.ReadDenial{Path: where, Rule: rule}
	return &hfs.Error{
		Code: hfs.CodeReadDenied, Op: op, Path: target.DisplayPath, Mode: r.mode,
		Message: fmt.Sprintf("cannot %s %q: %s", op, target.DisplayPath, cause.Error()),
		Err:     cause,
	}
}

// Skip reports whether a search walk must not open abs at all: a path the
// deny-read set names. The walk reaches abs only through directories it
// entered, each decided (Refuse), so only abs itself is matched.
func (r *readFence) Skip(abs string, isDir bool) bool {
	_, ok := r.deny.DeniedEntry(abs, isDir)
	return ok
}

// Refuse reports whether a search must not read the opened descriptor fd
// of its walk root, or of the single file a grep searches: decide's
// decision without an approval (a search is never approved), on the
// descriptor's real path. A descriptor whose path cannot be read is
// refused.
func (r *readFence) Refuse(fd int, st *unix.Stat_t, _ string) bool {
	if r.deny.Empty() {
		return false
	}
	where, err := fdPath(fd)
	if err != nil {
		return true
	}
	_, denied := r.denied(where, st, false)
	return denied
}

// RefuseEntry reports whether a search walk must not read the opened
// descriptor of an entry beneath its root: by identity alone
// (identityDenied: no system call of its own, but for the snapshot every
// identityTTL and the hard-link index once). Its path needs no other check:
// Skip matched it just before the open, the walk opened it without
// following a symlink anywhere on the way (search.Gate), and each
// directory on the way was decided when the walk entered it.
func (r *readFence) RefuseEntry(_ int, st *unix.Stat_t, _ string) bool {
	if r.deny.Empty() {
		return false
	}
	_, denied := r.identityDenied(st, false)
	return denied
}

// mutationDenied returns the refusal of a mutation whose canonical target
// key (the entry a write or mkdir makes, the parent directory of the entry a
// move or delete changes) lies in the deny-read set, as a file or as a
// directory: a credential is neither replaced, edited, moved nor removed by
// a file tool (its old content would be read, or it would be moved where it
// can be read), in any mode. The entry itself is decided again on its open
// parent, with the denied paths it holds (entryDenied).
func (r *readFence) mutationDenied(target hfs.Target, op string) error {
	if rule, ok := r.deniedEither(string(target.Key)); ok {
		return r.refusal(target, op, string(target.Key), rule)
	}
	return nil
}

// deniedEither reports whether abs is denied as a file or as a directory.
func (r *readFence) deniedEither(abs string) (string, bool) {
	if rule, ok := r.deny.Denied(abs, false); ok {
		return rule, true
	}
	return r.deny.Denied(abs, true)
}

// entryDenied is mutationDenied for the entry name in the open directory
// parent, on the directory's real path (its descriptor's, so a parent
// renamed or swapped for a link since the target was resolved is judged
// where it is now): the entry a write publishes, a move takes or makes, a
// delete removes (each entry of a recursive one). target is the site's
// target (the entry itself, or a directory above it), whose display path
// names the entry in the refusal. A parent whose path cannot be read is
// refused (fail closed).
func (r *readFence) entryDenied(target hfs.Target, parent *dirfd.Parent, name string) error {
	if r.deny.Empty() {
		return nil
	}
	where, err := parent.Where()
	if err != nil {
		return r.refusal(target, "write", string(target.Key), "its real path could not be read: "+err.Error())
	}
	abs := filepath.Join(where, name)
	rule, ok := r.changedDenied(abs)
	if !ok {
		return nil
	}
	shown := target
	key := string(target.Key)
	if rel, beneath := relBeneath(key, abs); beneath {
		shown.DisplayPath = filepath.Join(target.DisplayPath, rel)
	} else {
		shown.DisplayPath = abs
	}
	return r.refusal(shown, "write", abs, rule)
}

// changedDenied reports whether changing the absolute, clean path abs is
// refused, and by which rule: abs is denied (as a file or as a directory,
// whichever it is or becomes), or a path of the snapshot (identities.paths:
// the anchored patterns without `**` expanded, the bases of those with
// `**`) is abs itself or lies beneath it, so renaming or removing abs would
// take the denied path along; or abs lies beneath a directory a symlink in
// a denied directory leads to (identities.linkedDirs).
func (r *readFence) changedDenied(abs string) (string, bool) {
	if rule, ok := r.deniedEither(abs); ok {
		return rule, true
	}
	ids := r.identities()
	for p, why := range ids.paths {
		if dirfd.Beneath(abs, p) {
			return why, true
		}
	}
	for d, why := range ids.linkedDirs {
		if dirfd.Beneath(d, abs) {
			return why, true
		}
	}
	return "", false
}

// relBeneath returns p relative to dir ("." for dir itself) and whether p
// lies beneath dir.
func relBeneath(dir, p string) (string, bool) {
	if !dirfd.Beneath(dir, p) {
		return "", false
	}
	rel, err := filepath.Rel(dir, p)
	return rel, err == nil
}

// fdPath returns the real path of the open descriptor fd, as the kernel
// names it (/proc/self/fd/N).
func fdPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%q is not a path in this mount namespace", p)
	}
	return p, nil
}

var _ search.Gate = (*readFence)(nil)

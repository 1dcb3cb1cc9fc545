package fssandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
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
	// maxBeneathFiles bounds the regular files recorded beneath the denied
	// directories (for the hard-link check): credential stores are small,
	// and a snapshot must not cost a walk of a large tree.
	maxBeneathFiles = 20_000
)

// devIno is a file's identity.
type devIno struct{ dev, ino uint64 }

func identity(st *unix.Stat_t) devIno { return devIno{uint64(st.Dev), st.Ino} } //nolint:unconvert // Dev is uint64 on amd64 only

// identities is one snapshot of the existing denied paths: each denied
// directory and file by identity, with the rule that denies it, and the
// regular files beneath the denied directories.
type identities struct {
	dirs    map[devIno]string
	files   map[devIno]string
	beneath map[devIno]string
	// paths are the existing denied paths, each as the pattern's expansion
	// spells it and by its real path (symlinks resolved), with its rule.
	paths map[string]string
	taken time.Time
}

// readFence decides every read of the file tools against the policy's
// deny-read set (issue 24), in every mode, on the opened descriptor: its
// real path (/proc/self/fd) must not be denied, and neither its identity
// nor that of any directory on its real path may be a denied path's, so a
// symlink, "..", a bind mount of a denied directory or a hard link to a
// denied file made elsewhere does not reach it. It does not see
// files that merely hold a copy of a secret, nor a hard link to a file
// beyond maxBeneathFiles of the denied directories, nor a hard link to a
// file matched only by a pattern at any depth (".env").
type readFence struct {
	deny sandbox.DenyRead
	mode sandbox.Mode // the deployment default, named by a refusal

	mu   sync.Mutex
	snap *identities
}

func newReadFence(policy *sandboxpolicy.Service) *readFence {
	return &readFence{deny: policy.DenyRead(), mode: policy.Default().Mode}
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
	if rule, ok := r.denied(where, st, entry, true); ok {
		return r.refusal(target, op, where, rule)
	}
	return nil
}

// denied reports whether reading where (the descriptor's real path, whose
// fstat is st) is refused, and by which rule. With entry, only the entry's
// own metadata is read: a denied directory itself passes, what lies inside
// it does not. With ancestors, the directories on the real path are
// checked too, by path and identity; without (a file a search walk found:
// the walk decided each directory it entered, and its root, on their
// descriptors) only the file itself is.
func (r *readFence) denied(where string, st *unix.Stat_t, entry, ancestors bool) (string, bool) {
	isDir := dirfd.IsDir(st)
	parent := filepath.Dir(where)
	switch {
	case !ancestors:
		if rule, ok := r.deny.DeniedEntry(where, isDir); ok {
			return rule, true
		}
	case entry && isDir:
		if rule, ok := r.deny.Denied(parent, true); ok && parent != where {
			return rule, true
		}
	default:
		if rule, ok := r.deny.Denied(where, isDir); ok {
			return rule, true
		}
	}
	if rule, ok := r.identityDenied(st, entry); ok {
		return rule, true
	}
	if !ancestors {
		return "", false
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
// directory.
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
		if st.Nlink > 1 {
			if rule, ok := ids.beneath[id]; ok {
				return rule + ", a hard link to it", true
			}
		}
	}
	return "", false
}

// identities returns a snapshot of the existing denied paths' identities,
// taken again once identityTTL has passed.
func (r *readFence) identities() *identities {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snap != nil && time.Since(r.snap.taken) < identityTTL {
		return r.snap
	}
	ids := &identities{dirs: map[devIno]string{}, files: map[devIno]string{}, beneath: map[devIno]string{}, paths: map[string]string{}, taken: time.Now()}
	budget := maxBeneathFiles
	for _, pattern := range r.deny.Anchored() {
		matches, err := doublestar.FilepathGlob(pattern)
		if err != nil {
			continue // a malformed pattern matches nothing here; Denied still applies
		}
		for _, m := range matches {
			var st unix.Stat_t
			// Followed: a denied path that is a symlink denies what it
			// names, wherever that is.
			if unix.Stat(m, &st) != nil {
				continue
			}
			rule, ok := r.deny.Denied(m, dirfd.IsDir(&st))
			if !ok {
				continue // exempted by a later pattern
			}
			ids.paths[m] = rule
			if resolved, err := filepath.EvalSymlinks(m); err == nil {
				ids.paths[resolved] = rule
			}
			rule += ", the same " + kind(&st) + " as " + m
			if !dirfd.IsDir(&st) {
				ids.files[identity(&st)] = rule
				continue
			}
			ids.dirs[identity(&st)] = rule
			budget = recordBeneath(m, rule, ids, budget)
		}
	}
	r.snap = ids
	return ids
}

// recordBeneath records the regular files beneath the denied directory dir,
// at most budget of them, and returns the budget left.
func recordBeneath(dir, rule string, ids *identities, budget int) int {
	errFull := errors.New("full")
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil //nolint:nilerr // an unreadable entry is skipped
		}
		if budget <= 0 {
			return errFull
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil // removed since it was listed
		}
		ids.beneath[identity(&st)] = rule + " (" + p + ")"
		budget--
		return nil
	})
	return budget
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

// Refuse reports whether a search walk must not read the opened descriptor
// fd, opened at abs: decide's decision without an approval (a search is
// never approved); for a file, without the directories on its path, which
// the walk decided when it entered them, and without its path again when
// the descriptor's real path is abs (Skip matched it just before the
// open). A descriptor whose path cannot be read is refused.
func (r *readFence) Refuse(fd int, st *unix.Stat_t, abs string) bool {
	if r.deny.Empty() {
		return false
	}
	where, err := fdPath(fd)
	if err != nil {
		return true
	}
	isDir := dirfd.IsDir(st)
	if !isDir && where == abs {
		_, denied := r.identityDenied(st, false)
		return denied
	}
	// A directory, or a file whose descriptor names another path than the
	// walk opened (a parent moved meanwhile): the whole decision.
	_, denied := r.denied(where, st, false, isDir || where != abs)
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
// whichever it is or becomes), or an existing denied path of the snapshot
// (identities.paths: the anchored patterns expanded) is abs itself or lies
// beneath it, so renaming or removing abs would take the denied path along.
func (r *readFence) changedDenied(abs string) (string, bool) {
	if rule, ok := r.deniedEither(abs); ok {
		return rule, true
	}
	for p, rule := range r.identities().paths {
		if dirfd.Beneath(abs, p) {
			return rule + ", " + p + " lies beneath it", true
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

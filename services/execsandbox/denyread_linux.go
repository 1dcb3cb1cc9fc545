package execsandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fsuser"
	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// maxAnchoredMatches bounds what one anchored deny-read pattern may match
// (a glob such as `/**/id_rsa` over the whole host); more is refused.
const maxAnchoredMatches = 10_000

// masker finds the paths of the deployment's deny-read set
// (sandboxpolicy.Service.DenyRead) that exist where a command can see them,
// for its view to mask (issue 24):
//
//   - each anchored pattern (`~/.ssh`, `/etc/harness.yaml`, a glob such as
//     `~/.cargo/credentials*`) expanded on the host with doublestar (never
//     following a symlink while matching), each match checked again with
//     Denied (an exemption holds);
//   - each any-depth pattern (`.env`, `.env.*`) found by a bounded walk of
//     the policy's roots (the workspace roots, the temp roots (only the
//     command user's entries there), the --writable-root ones) and of every
//     HTTP principal's workspaces (sandboxpolicy.Service.PrincipalRoots) with an
//     internal/protectscan scanner of its own (never following a symlink,
//     entering a directory shaped like a git repository like any other,
//     since any directory can be given that shape, with a cache of
//     unchanged directories, under the call's deadline, failing closed;
//     a directory that vanishes mid-search is skipped: the workspace
//     churns with every build's scratch files, and the ancestors of what
//     a command's view masks are pinned, so it cannot rename them), each
//     match checked again with Denied.
//
// A match that is a symlink is masked at its target, and so is the target
// of a symlink beneath a denied directory (linkedOut) (the command would
// reach the target through it). Paths at or beneath /dev and /proc are left
// to the view's fresh ones. Not covered: an any-depth match outside those
// roots (a `.env` elsewhere on the host is refused to the file tools but
// readable to a command unless an anchored pattern names it), and anything
// created, or moved into place by a process outside the command's view,
// after the search.
type masker struct {
	policy  *sandboxpolicy.Service
	scanner *protectscan.Scanner
	links   protectscan.Links // linkedOut's listings

	// trusted are the anchored denied directories that existed at the
	// first search (the warm-up's, at start), by identity: only their
	// links are followed (linkedOut).
	trustOnce sync.Once
	trusted   map[dirIdentity]bool
}

func newMasker(policy *sandboxpolicy.Service) *masker {
	return &masker{policy: policy, scanner: protectscan.New(protectscan.Options{EnterRepositories: true, Symlinks: true})}
}

// find returns what a command of policy running as cred (commandUser's;
// nil: the server's own user) must not read: canonical paths, sorted,
// none beneath another (a masked directory hides what it holds). A path
// behind a directory that user cannot search (a home of mode 0700 another
// user's command meets) is masked at the first such directory instead:
// bubblewrap, running as that user, could not reach the path to mount on
// it, and the command cannot reach anything beneath it anyway. Errors:
// *exec.Error with CodeUnavailable when the search did not finish
// (deadline, budget, an unreadable directory of a root).
func (m *masker) find(ctx context.Context, policy sandbox.ExecutionPolicy, cred *syscall.Credential) ([]subproc.Masked, error) {
	return m.search(ctx, policy, cred, false)
}

// findHost is find for a command that sees the host's /dev and /proc (the
// Landlock isolation): paths there are kept.
func (m *masker) findHost(ctx context.Context, policy sandbox.ExecutionPolicy, cred *syscall.Credential) ([]subproc.Masked, error) {
	return m.search(ctx, policy, cred, true)
}

// dirIdentity is a directory's device and inode.
type dirIdentity struct{ dev, ino uint64 }

// search is find, keeping the paths at or beneath /dev and /proc when
// host (a bubblewrap view has fresh ones: they are left to it).
func (m *masker) search(ctx context.Context, policy sandbox.ExecutionPolicy, cred *syscall.Credential, host bool) ([]subproc.Masked, error) {
	uid := uidOf(cred)
	d := m.policy.DenyRead()
	if d.Empty() {
		return nil, nil
	}
	found := map[string]bool{} // canonical path -> directory
	for _, p := range d.Anchored() {
		if err := anchored(ctx, d, p, found); err != nil {
			return nil, unfinished(err)
		}
	}
	// Links are followed only in the anchored denied directories that
	// existed at the first search: a directory a command made later
	// (`~/.kube` in a home workspace, a `.env/` matched at any depth) is
	// the agent's, and so would be what its links name (the attack
	// review: links to /usr, to the workspace's src/, to another
	// principal's workspace).
	m.trustOnce.Do(func() {
		m.trusted = map[dirIdentity]bool{}
		for p, dir := range found {
			var st unix.Stat_t
			if dir && unix.Stat(p, &st) == nil {
				m.trusted[dirIdentity{dirfd.Dev(&st), st.Ino}] = true
			}
		}
	})
	var trusted []string
	for p, dir := range found {
		var st unix.Stat_t
		if dir && unix.Stat(p, &st) == nil && m.trusted[dirIdentity{dirfd.Dev(&st), st.Ino}] {
			trusted = append(trusted, p)
		}
	}
	if len(d.AnyDepth()) > 0 {
		if err := m.anyDepth(ctx, d, policy, uid, found); err != nil {
			return nil, unfinished(err)
		}
	}
	linkedOut(&m.links, m.policy.LinkTargets(), trusted, found, policy.Roots(), d.Homes())
	// What a link led to once, still there, after its chain changed.
	m.policy.LinkTargets().Current(func(p string, fi os.FileInfo, _ string) {
		if sandboxpolicy.LinkedDenial(p, policy.Roots(), d.Homes()) {
			found[p] = found[p] || fi.IsDir()
		}
	})
	who := accountOf(cred)
	masks := make(map[string]bool, len(found)) // path -> directory
	for p, dir := range found {
		if !host && (dirfd.Beneath("/dev", p) || dirfd.Beneath("/proc", p)) {
			continue
		}
		if q := who.unsearchable(p); q != "" {
			p, dir = q, true
		}
		masks[p] = masks[p] || dir
	}
	var out []subproc.Masked
	for _, p := range slices.Sorted(maps.Keys(masks)) {
		if slices.ContainsFunc(out, func(o subproc.Masked) bool { return o.Dir && dirfd.Beneath(o.Path, p) }) {
			continue
		}
		out = append(out, subproc.Masked{Path: p, Dir: masks[p]})
	}
	return out, nil
}

// unfinished is the error of a deny-read search that did not finish.
func unfinished(err error) error {
	return &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
		"the search for deny-read paths did not finish: %v; the command was not run rather than run able to read them", err), Cause: err}
}

// anchored adds to found what the absolute pattern p matches on the host
// and d denies.
func anchored(ctx context.Context, d sandbox.DenyRead, p string, found map[string]bool) error {
	n := 0
	err := doublestar.GlobWalk(os.DirFS("/"), strings.TrimPrefix(p, "/"), func(rel string, _ fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n++; n > maxAnchoredMatches {
			return fmt.Errorf("the deny-read pattern %s matches more than %d paths", p, maxAnchoredMatches)
		}
		addMatch(d, "/"+rel, found)
		return nil
	}, doublestar.WithNoFollow())
	if errors.Is(err, doublestar.ErrBadPattern) {
		return fmt.Errorf("the deny-read pattern %s: %w", p, err)
	}
	return err
}

// addMatch adds path to found when d denies it, at its canonical path
// (through a symlink: its target), unless it is missing.
func addMatch(d sandbox.DenyRead, path string, found map[string]bool) {
	info, err := os.Lstat(path)
	if err != nil {
		return
	}
	if _, ok := d.Denied(path, info.IsDir()); !ok {
		return
	}
	canon, err := filepath.EvalSymlinks(path)
	if err != nil {
		return // a dangling symlink reaches nothing
	}
	if info, err = os.Stat(canon); err != nil || canon == "/" {
		return
	}
	found[canon] = info.IsDir()
}

// anyDepth adds to found the entries of policy's roots that d denies,
// found by m's scanner: its Match is d's any-depth patterns matched
// against the path below the root (cheap: a few patterns, the entry's
// own components; the ancestors were matched on the way down), each
// entry it finds then decided by Denied on its whole path (so an
// exemption holds). A `**/a/b` pattern is so not matched across a root's
// own path.
func (m *masker) anyDepth(ctx context.Context, d sandbox.DenyRead, policy sandbox.ExecutionPolicy, uid int, found map[string]bool) error {
	var patterns []gitignore.Pattern
	for _, p := range d.AnyDepth() {
		patterns = append(patterns, gitignore.ParsePattern(p, nil))
	}
	match := func(rel string, isDir bool) bool {
		parts := strings.Split(rel, "/")
		return slices.ContainsFunc(patterns, func(p gitignore.Pattern) bool { return p.Match(parts, isDir) == gitignore.Exclude })
	}
	roots := policy.Roots()
	for _, r := range m.policy.PrincipalRoots() {
		// Another principal's workspace: its secrets are hidden from
		// this command too (issue 26).
		if !slices.ContainsFunc(roots, func(o string) bool { return dirfd.Beneath(o, r) }) {
			roots = append(roots, r)
		}
	}
	for _, r := range roots {
		if _, err := os.Lstat(r); err != nil {
			continue
		}
		root := protectscan.Root{Path: r, Shared: policy.Shared(r), Owner: uid}
		entries, err := m.scanner.Scan(ctx, []protectscan.Root{root}, match)
		if err != nil {
			return err
		}
		for _, e := range entries {
			addMatch(d, e.Path, found)
		}
	}
	return nil
}

// unmasked returns the protected and reserved paths of c that no mask
// covers (a mask on top of them would hide what the stage checks), and
// refuses a workdir who cannot reach (a directory on the way, or the
// workdir itself, that who may not search: another user's home of mode
// 0700), naming that directory, and a workdir at or beneath a masked
// path. Errors: *exec.Error with CodeInvalidRequest.
func unmasked(c *subproc.Confinement, workdir string, who account) error {
	hidden := func(p string) bool {
		return slices.ContainsFunc(c.Masked, func(m subproc.Masked) bool { return dirfd.Beneath(m.Path, p) })
	}
	c.Protected = slices.DeleteFunc(c.Protected, func(p subproc.Protected) bool { return hidden(p.Path) })
	c.Reserved = slices.DeleteFunc(c.Reserved, func(p subproc.Reserved) bool { return hidden(p.Path) })
	if err := reachable(workdir, who); err != nil {
		return err
	}
	if hidden(sandboxpolicy.CanonicalPath(workdir)) {
		return &exec.Error{Code: exec.CodeInvalidRequest, Message: fmt.Sprintf(
			"workdir %s is at or beneath a path the deny-read set hides from commands; commands do not start there", workdir)}
	}
	return nil
}

// reachable refuses a workdir who cannot reach (a directory on the way, or
// the workdir itself, that who may not search), naming that directory.
// Errors: *exec.Error with CodeInvalidRequest.
func reachable(workdir string, who account) error {
	if q := who.unreachable(sandboxpolicy.CanonicalPath(workdir)); q != "" {
		return &exec.Error{Code: exec.CodeInvalidRequest, Message: fmt.Sprintf(
			"workdir %s cannot be reached by the user commands run as (uid %d): it may not search %s%s; commands do not start there: "+
				"give that user search permission on it, or use a workspace it can reach", workdir, who.uid, q, modeText(q))}
	}
	return nil
}

// modeText describes dir's owner and mode bits, e.g. " (owner uid 1000,
// mode 0700)"; "" when it cannot be stat'ed.
func modeText(dir string) string {
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) != nil {
		return ""
	}
	return fmt.Sprintf(" (owner uid %d, mode %04o)", st.Uid, st.Mode&0o7777)
}

// account is the user a command runs as, for the search permission of a
// directory: its uid and groups.
type account struct {
	uid  uint32
	gids []uint32
}

// accountOf returns cred's account (uid, primary group; commandUser gives
// no supplementary group), or the server's own (effective uid and gid,
// supplementary groups) when cred is nil.
func accountOf(cred *syscall.Credential) account {
	if cred != nil {
		return account{uid: cred.Uid, gids: []uint32{cred.Gid}}
	}
	a := account{uid: uint32(os.Geteuid()), gids: []uint32{uint32(os.Getegid())}}
	if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups {
			a.gids = append(a.gids, uint32(g))
		}
	}
	return a
}

// unsearchable returns the first proper ancestor of p (an absolute
// canonical path) whose mode bits deny a the search permission, "" for
// none, decided by fsuser.Account.May (the mode bits and the POSIX
// access ACL, as the kernel reads them for a process without
// capabilities: uid 0 is judged as the owner it is, as a command runs).
func (a account) unsearchable(p string) string {
	for dir := "/"; dir != p; {
		rest := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		next := filepath.Join(dir, strings.SplitN(rest, "/", 2)[0])
		if next == p {
			return ""
		}
		if !a.searches(next) {
			return next
		}
		dir = next
	}
	return ""
}

// unreachable is unsearchable, the directory p itself included: the first
// of p's ancestors and p that a may not search, "" for none.
func (a account) unreachable(p string) string {
	if q := a.unsearchable(p); q != "" {
		return q
	}
	if !a.searches(p) {
		return p
	}
	return ""
}

// searches reports whether a may search dir (fsuser.Account.May); a dir
// that cannot be stat'ed counts as searchable (what is missing is reported
// where it is used), one whose ACL cannot be read as unsearchable (its
// caller then masks the whole directory: more than needed, never less).
func (a account) searches(dir string) bool {
	ok, err := fsuser.Account{UID: a.uid, GIDs: a.gids}.May(dir, fsuser.Search, true)
	if err != nil {
		return !errors.Is(err, fsuser.ErrACL)
	}
	return ok
}

// maxLinkedOutEntries bounds the entries linkedOut reads beneath each
// denied directory (credential stores are small).
const maxLinkedOutEntries = 4096

// linkedOut adds to found the target of each symlink beneath a denied
// directory of dirs (a key kept in a dotfiles repository and linked into
// ~/.ssh): read through the link, it is the denied file, so its target is
// denied too where sandboxpolicy.LinkedDenial says: beneath one of homes or
// roots, neither a home nor holding one or a root (masking / or /usr would
// break every command; a root's holder would hide the command's own
// roots); links that lead nowhere are left out. At most maxLinkedOutEntries entries are read
// beneath each denied directory, shallowest first, a directory holding
// more than is left of them passed over and its siblings read (the
// review: ~/.kube/cache/http/ of 5,000 files hid ~/.kube/config's link):
// the bound is each denied directory's own, so a denied directory a command filled (sorting first) leaves
// the others read in full (the review of issue 34 found a bound over all
// of them, in the protected directories' alike search). A link is resolved
// in one kernel walk (protectscan.ResolveLink), not a stat of every prefix
// at every hop. Each directory's listing is kept in links while it is
// unchanged (protectscan.Links), and each target found remembered in
// kept (sandboxpolicy.LinkTargets, shared with the file fence), whose
// targets the search adds while each is what it was.
func linkedOut(links *protectscan.Links, kept *sandboxpolicy.LinkTargets, dirs []string, found map[string]bool, roots, homes []string) {
	slices.Sort(dirs)
	for _, dir := range dirs {
		links.Beneath(dir, maxLinkedOutEntries, func(p string) {
			var st unix.Stat_t
			target, ok := protectscan.ResolveLink(p, &st)
			if !ok || !sandboxpolicy.LinkedDenial(target, roots, homes) {
				return
			}
			found[target] = found[target] || st.Mode&unix.S_IFMT == unix.S_IFDIR
			if fi, err := os.Lstat(target); err == nil {
				kept.Add(target, fi, "what "+p+" links to")
			}
		})
	}
}

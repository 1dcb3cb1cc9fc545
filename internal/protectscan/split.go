package protectscan

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// maxModulesDepth bounds how deep a split searches modules/ for the gitdirs
// of submodules (whose names may hold slashes).
const maxModulesDepth = 8

// gitMember is one member of a git directory that stays read-only when the
// directory is split (Options.SplitGit).
type gitMember struct {
	rel string // below the git directory, slash-separated
	dir bool
	// reserve says a missing one is listed (Entry.Missing), so a command
	// cannot create it.
	reserve bool
	// placeholder is what the file a reservation makes holds
	// (Entry.Placeholder).
	placeholder string
}

// repoMembers are the read-only members of a repository's git directory
// (its own, a bare repository, a submodule's gitdir): what makes git run
// code or changes where it looks (sandbox.GitMember's list).
var repoMembers = []gitMember{
	{rel: "config", reserve: true},
	{rel: "config.worktree", reserve: true},
	{rel: "hooks", dir: true, reserve: true},
	{rel: "info/attributes", reserve: true},
	{rel: "objects/info/alternates", reserve: true},
	{rel: "objects/info/http-alternates"},
	{rel: "commondir", reserve: true, placeholder: ".\n"},
	{rel: "gitdir"},
	{rel: "remotes", dir: true},
	{rel: "branches", dir: true},
}

// worktreeMembers are those of a linked worktree's gitdir (worktrees/<id>):
// git reads no config, hooks or attributes there but config.worktree.
var worktreeMembers = []gitMember{
	{rel: "config.worktree", reserve: true},
	{rel: "commondir", reserve: true, placeholder: ".\n"},
	{rel: "gitdir"},
}

// errNoSplit says a git directory cannot be split safely (a member is a
// symlink or of an unexpected kind): it stays protected whole.
var errNoSplit = errors.New("not split")

// splitGitdirs replaces, in w.found, each git directory found (w.gitDirs)
// that is shaped like a repository by the entry of the directory itself
// (Entry.Split) and its read-only members: those that exist, and the
// missing ones a command must not create (Entry.Missing). A directory that
// is not shaped like a repository, or has a member that is a symlink or of
// an unexpected kind, stays protected whole.
func (w *walk) splitGitdirs() error {
	for _, path := range slices.Sorted(maps.Keys(w.gitDirs)) {
		e, ok := w.found[path]
		if !ok || !e.Dir || w.beneathDir(path) {
			continue
		}
		r, rel := w.rootOf(path)
		if r == nil {
			continue
		}
		fd, _, ok, err := openBeneath(r, rel, path)
		if err != nil {
			return err
		}
		if !ok {
			delete(w.found, path) // vanished: nothing to protect
			continue
		}
		out := map[string]Entry{}
		err = splitAt(fd, path, repoMembers, out, 0)
		_ = unix.Close(fd)
		if errors.Is(err, errNoSplit) || vanished(err) {
			// Not splittable, or changing under the search (a member
			// replaced meanwhile): protected whole, as found.
			continue
		}
		if err != nil {
			return err
		}
		for p := range w.found {
			if p != path && strings.HasPrefix(p, path+"/") {
				delete(w.found, p) // a gitdir below it: the split covers it
			}
		}
		for p, m := range out {
			w.found[p] = m
		}
	}
	return nil
}

// beneathDir reports whether path lies beneath another directory entry: a
// git directory already split (which covers it), or one protected whole.
func (w *walk) beneathDir(path string) bool {
	for p, e := range w.found {
		if e.Dir && strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// rootOf returns the innermost root holding path, and path relative to it.
func (w *walk) rootOf(path string) (*openedRoot, string) {
	var best *openedRoot
	rel := ""
	for _, r := range w.roots {
		if rr, ok := below(r.Path, path); ok && (best == nil || len(r.Path) > len(best.Path)) {
			best, rel = r, rr
		}
	}
	return best, rel
}

// splitAt splits the git directory fd (an O_PATH or read descriptor) at
// path, whose members are members, into out, and the gitdirs below its
// worktrees/ and modules/ likewise; errNoSplit when it is not shaped like a
// repository or a member is of an unexpected kind.
func splitAt(fd int, path string, members []gitMember, out map[string]Entry, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if !shapedRepo(fd) {
		return errNoSplit
	}
	out[path] = Entry{Path: path, Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: true, Split: true}
	for _, m := range members {
		if err := member(fd, path, m, out); err != nil {
			return err
		}
	}
	if depth >= maxModulesDepth {
		return nil
	}
	if err := eachSubdir(fd, path, "worktrees", func(sub int, subPath string) error {
		return splitOrWhole(sub, subPath, worktreeMembers, out, depth+1)
	}); err != nil {
		return err
	}
	return modules(fd, path, "modules", out, depth+1)
}

// modules splits each gitdir below the directory name of fd (at parent; "."
// for fd itself):
// a directory shaped like a repository is split, another is searched
// further, to maxModulesDepth; one at that depth is protected whole.
func modules(fd int, parent, name string, out map[string]Entry, depth int) error {
	return eachSubdir(fd, parent, name, func(sub int, subPath string) error {
		if shapedRepo(sub) || depth >= maxModulesDepth {
			return splitOrWhole(sub, subPath, repoMembers, out, depth)
		}
		for _, m := range repoMembers {
			// Below modules/ any such name counts (sandbox.GitMember).
			if err := member(sub, subPath, gitMember{rel: m.rel, dir: m.dir}, out); err != nil {
				return err
			}
		}
		return modules(sub, subPath, ".", out, depth+1) // its own subdirectories
	})
}

// splitOrWhole splits the gitdir sub (at path), or protects it whole when
// it cannot be split.
func splitOrWhole(sub int, path string, members []gitMember, out map[string]Entry, depth int) error {
	inner := map[string]Entry{}
	err := splitAt(sub, path, members, inner, depth)
	if errors.Is(err, errNoSplit) {
		var st unix.Stat_t
		if err := unix.Fstat(sub, &st); err != nil {
			return &os.PathError{Op: "fstat", Path: path, Err: err}
		}
		out[path] = Entry{Path: path, Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: true}
		return nil
	}
	if err != nil {
		return err
	}
	for p, e := range inner {
		out[p] = e
	}
	return nil
}

// eachSubdir calls f with a descriptor on each subdirectory (not a symlink)
// of the directory name in fd (at parent), when there is such a directory.
func eachSubdir(fd int, parent, name string, f func(sub int, path string) error) error {
	dir := filepath.Join(parent, name)
	dfd, err := openat(fd, name, dirFlags)
	if err != nil {
		if vanished(err) {
			return nil
		}
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd) //nolint:errcheck // read-only descriptor
	names, err := subdirNames(dfd, dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		sub, err := openat(dfd, n, dirFlags)
		if err != nil {
			if vanished(err) {
				continue
			}
			return &os.PathError{Op: "open", Path: filepath.Join(dir, n), Err: err}
		}
		err = f(sub, filepath.Join(dir, n))
		_ = unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// subdirNames returns the names of the subdirectories (not symlinks) of
// the directory fd at path.
func subdirNames(fd int, path string) ([]string, error) {
	dup, err := openat(fd, ".", dirFlags)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(dup), path)
	defer f.Close() //nolint:errcheck // read-only descriptor
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type()&os.ModeType == os.ModeDir {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// member records the member m of the git directory fd (at path) in out:
// existing, as an entry of its identity; missing while its parent exists,
// when m.reserve, as a Missing entry. A symlink, or an entry of
// another kind than m's, is errNoSplit.
func member(fd int, path string, m gitMember, out map[string]Entry) error {
	parts := strings.Split(m.rel, "/")
	cur, owned := fd, false
	defer func() {
		if owned {
			_ = unix.Close(cur)
		}
	}()
	for i, name := range parts {
		p := filepath.Join(path, strings.Join(parts[:i+1], "/"))
		var st unix.Stat_t
		if err := fstatat(cur, name, &st); err != nil {
			if vanished(err) && !errors.Is(err, unix.ENOENT) {
				return errNoSplit // a component replaced meanwhile
			}
			if !errors.Is(err, unix.ENOENT) {
				return &os.PathError{Op: "lstat", Path: p, Err: err}
			}
			if m.reserve && i == len(parts)-1 {
				// Only where its parent exists: a placeholder is made
				// there, never a directory of the repository's.
				out[p] = Entry{Path: p, Dir: m.dir, Missing: true, Placeholder: m.placeholder}
			}
			return nil
		}
		last := i == len(parts)-1
		typ := st.Mode & unix.S_IFMT
		switch {
		case last && (m.dir && typ == unix.S_IFDIR || !m.dir && typ == unix.S_IFREG):
			out[p] = Entry{Path: p, Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: m.dir, Placeholder: m.placeholder}
			return nil
		case last || typ != unix.S_IFDIR:
			return errNoSplit
		}
		next, err := openat(cur, name, dirfd.OPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
		if err != nil {
			return errNoSplit // replaced meanwhile: protect whole
		}
		if owned {
			_ = unix.Close(cur)
		}
		cur, owned = next, true
	}
	return nil
}

// ShapedRepository reports whether the directory at path (a symlink to it
// followed, as git follows a `.git` link) is shaped like a git repository
// (shapedRepo); false when it cannot be opened.
func ShapedRepository(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	return shapedRepo(fd)
}

// shapedRepo reports whether the directory fd is shaped like a git
// repository (setup.c is_git_directory): a HEAD file, and a commondir file
// or objects and refs directories.
func shapedRepo(fd int) bool {
	is := func(name string, typ uint32) bool {
		var st unix.Stat_t
		return fstatat(fd, name, &st) == nil && uint32(st.Mode)&unix.S_IFMT == typ //nolint:unconvert // a uint16 on darwin
	}
	return is("HEAD", unix.S_IFREG) && (is("commondir", unix.S_IFREG) || is("objects", unix.S_IFDIR) && is("refs", unix.S_IFDIR))
}

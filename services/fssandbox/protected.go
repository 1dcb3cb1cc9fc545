package fssandbox

import (
	"fmt"
	"path"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/internal/fsbackend"
)

// protectedError is the cause of a denial of a protected path.
type protectedError struct {
	rel  string // the path relative to the writable root
	rule string // the metadata name or pattern that protects it
}

func (e *protectedError) Error() string {
	return fmt.Sprintf("%q is a protected path inside the writable root (%s)", e.rel, e.rule)
}

// checkProtected decides whether the entry rel (a clean path relative to
// root, "" for the root) is a protected path under workspace-write: by the
// vocabulary's rule (version-control metadata, --protect patterns), or
// because it lies in a directory beneath root that git takes for a
// repository directory (the directory a `.git` file points to, a bare
// repository), found by its shape.
func (f *FileSystem) checkProtected(root, rel string) error {
	if rule, ok := f.protect.Protected(rel, false); ok {
		return &protectedError{rel: rel, rule: rule}
	}
	for dir := path.Dir(rel); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if isGitDir(path.Join(root, dir)) {
			return &protectedError{rel: rel, rule: "a git repository directory: " + dir}
		}
	}
	return nil
}

// admitEntry is the fence's decision on one entry about to change: it
// decides protected paths by where the open parent directory is now (its
// descriptor's path), so a directory swapped for a link into .git after the
// check is caught. A parent that has left the root is an escape (EXDEV).
func (f *FileSystem) admitEntry(at fsbackend.Site, parent *dirfd.Parent, name string) error {
	where, err := parent.Where()
	if err != nil {
		return err
	}
	dir, ok := at.Root.Rel(where)
	if !ok {
		return fmt.Errorf("%s has left the writable root: %w", where, unix.EXDEV)
	}
	if err := f.checkProtected(at.Root.Path(), path.Join(dir, name)); err != nil {
		return denied(at.Target, at.Mode, err)
	}
	return nil
}

// relTo returns p relative to root ("" for root itself); p lies beneath
// root (dirfd.Beneath).
func relTo(root, p string) string {
	if p == root {
		return ""
	}
	if root == "/" {
		return p[1:]
	}
	return p[len(root)+1:]
}

// isGitDir reports whether dir has the shape git requires of a repository
// directory (setup.c is_git_directory): a HEAD file, and objects and refs
// directories, or a commondir file in their place (a linked worktree's).
func isGitDir(dir string) bool {
	var st unix.Stat_t
	if unix.Stat(path.Join(dir, "HEAD"), &st) != nil || !dirfd.IsRegular(&st) {
		return false
	}
	if unix.Stat(path.Join(dir, "commondir"), &st) == nil && dirfd.IsRegular(&st) {
		return true
	}
	return unix.Stat(path.Join(dir, "objects"), &st) == nil && dirfd.IsDir(&st) &&
		unix.Stat(path.Join(dir, "refs"), &st) == nil && dirfd.IsDir(&st)
}

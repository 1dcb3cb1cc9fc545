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
// root, "" for the root) is a protected path under the fence's policy. The
// policy decides (sandboxpolicy.Protection.Rule), by the one rule the
// command runner shares: version-control metadata and --protect patterns by
// name, existing or not; a directory shaped like a git repository; a gitdir
// or commondir a `.git` file names, in this or another writable root of the
// call. The writable roots are searched once per mutation, at the first
// decision that needs it. A search that cannot finish is a denial too (fail
// closed).
func (fc *fence) checkProtected(root, rel string) error {
	rule, err := fc.protection.Rule(path.Join(root, rel))
	switch {
	case err != nil:
		// Fail closed: what cannot be searched is not admitted.
		return &protectedError{rel: rel, rule: "the search for protected paths failed: " + err.Error()}
	case rule != "":
		return &protectedError{rel: rel, rule: rule}
	}
	return nil
}

// admitEntry is the fence's decision on one entry about to change: it
// decides protected paths by where the open parent directory is now (its
// descriptor's path), so a directory swapped for a link into .git after the
// check is caught. A parent that has left the root is an escape (EXDEV).
func (fc *fence) admitEntry(at fsbackend.Site, parent *dirfd.Parent, name string) error {
	where, err := parent.Where()
	if err != nil {
		return err
	}
	dir, ok := at.Root.Rel(where)
	if !ok {
		return fmt.Errorf("%s has left the writable root: %w", where, unix.EXDEV)
	}
	if err := fc.checkProtected(at.Root.Path(), path.Join(dir, name)); err != nil {
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

// Package atomicwrite publishes a file atomically, and by default durably,
// inside an open parent directory (a dirfd.Parent).
//
// Publication: the new content is written to an unnamed file made in the
// target's directory (O_TMPFILE), which takes the metadata to keep, is
// fsynced, and is then published. A create links it into the directory from
// /proc/self/fd/N (linkat with AT_SYMLINK_FOLLOW), which fails when any entry
// exists at the target, so a guarded create never replaces. A replace links
// it to a temporary name ".<base>.<pid>.<uuid>.tmp" and renames that over the
// target. The parent is fsynced after publication, one fsync shared by the
// writes that publish into the same directory at once (DirSyncs). A crash
// before publication leaves nothing; a crash between link and rename leaves
// the temporary name, which Reclaim removes once its writer is dead. Where
// the filesystem refuses O_TMPFILE, a private staging directory beside the
// target ".<base>.<pid>.<uuid>.tmpdir" (mode 0700) holds the temp file
// "<base>.tmp" instead, and is removed after publication.
//
// Metadata (spec difference 9): a new file is created with mode 0666 and the
// kernel applies the umask and the directory's default ACL; Request.Owner
// can give it another owner. A replaced file keeps its owner and group, its
// permission bits, and its extended attributes (POSIX ACLs included), copied
// onto the new file before publication. A target the process may not write
// is refused (*DeniedError). Where the owner or an extended attribute cannot
// be copied, or where the directory refuses publication (EACCES) but the file
// itself is writable, the file is rewritten in place instead (Result.InPlace):
// that rewrite is not atomic and is outside the crash-safety guarantee.
//
// Every syscall addresses a single name inside a descriptor, so a confined
// parent keeps the whole publication beneath its root. What it does not
// protect: the metadata is read from the target through /proc/self/fd, and
// the permission check (faccessat) is advisory for the in-place rewrite,
// whose open the kernel checks again.
package atomicwrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// Publication chooses how the temp file becomes the target.
type Publication uint8

const (
	// Replace publishes by rename, replacing whatever entry is at the target
	// (a dangling symlink is replaced, not followed).
	Replace Publication = iota
	// CreateOnly publishes by hard link, which fails when any entry exists at
	// the target; a collision is a *CollisionError.
	CreateOnly
)

// Durability says which fsyncs a write waits for (spec differences 6, 18).
type Durability uint8

const (
	// Full fsyncs the file before publication and the parent directory
	// after it: a write that returned survives power loss.
	Full Durability = iota
	// Atomic publishes atomically without any fsync: a write survives a
	// crash of the process, not of the machine.
	Atomic
)

// Owner is a user and group id pair.
type Owner struct {
	UID, GID int
}

// Request describes one publication.
type Request struct {
	// Parent is the open directory that receives the target.
	Parent *dirfd.Parent
	// Name is the target's single-component name inside Parent.
	Name string
	// Content is written exactly as given.
	Content string
	// Publication is Replace or CreateOnly.
	Publication Publication
	// Durability is Full (the zero value) or Atomic.
	Durability Durability
	// Owner, when set, is given to a file that did not exist before; nil
	// leaves the process's own. A replaced file keeps its owner whatever
	// Owner says.
	Owner *Owner
	// Syncs, when set, shares the parent's fsync with the writes publishing
	// into the same directory at once; nil fsyncs the parent alone.
	Syncs *DirSyncs
	// Confined says the caller runs Write on a thread under a Landlock
	// domain of Parent's writable root, which refuses at the syscall every
	// creation, link and rename in a directory that has left that root: the
	// checks of Parent's descriptor path before staging and before
	// publication (dirfd.Parent.CheckBeneath, one readlink each) are then
	// skipped. Without it, those checks narrow the window of a directory
	// moved out mid-write.
	Confined bool

	// Verify, when set, runs right after publication; when it fails, the
	// publication is undone and Write returns its error. With Verify set,
	// a Replace onto an existing entry publishes by
	// renameat2(RENAME_EXCHANGE), so the replaced file stays linked (at
	// the temp name, removed by the cleanup) and an undo exchanges it back;
	// a publication that created the entry (CreateOnly, or a Replace that
	// found nothing) is undone by unlinking the entry when it is still the
	// written file. An undo that fails is joined to Verify's error.
	Verify func() error
	// AfterStage, when set, runs after the temp file is written and fsynced
	// and before publication, with the staging directory's and the temp
	// file's absolute paths; both are empty for an unnamed temp file. Tests
	// use it to observe staging and to race.
	AfterStage func(stagingDir, tempFile string)
	// BeforeSync, when set, runs right before the temp file's fsync (at
	// Full durability): a journal starts its own sync there, so that both
	// reach the disk together (issue 25).
	BeforeSync func()
	// BeforePublish, when set, runs once the temp file is written and
	// fsynced and before anything changes the target (a publication, or
	// an in-place rewrite); an error fails the write with nothing
	// published. A journal waits there for its own sync, which ran
	// meanwhile (issue 25).
	BeforePublish func() error
	// stagingName overrides the generated staging name (tests only).
	stagingName string
	// noUnnamed makes the unnamed temp file refused, as a filesystem
	// without O_TMPFILE does (tests only).
	noUnnamed bool
	// link overrides linkat (tests only).
	link func(oldfd int, oldname string, newfd int, newname string, flags int) error
	// lstat overrides the collision inspection (tests only).
	lstat func(p *dirfd.Parent, name string) (unix.Stat_t, error)
}

// CollisionError reports that a CreateOnly publication could not link the
// target because of what is (or briefly was) there. Regular is true when a
// regular file is there or the entry vanished before inspection (L-86);
// false when a directory, symlink or other entry is there (L-57, L-58).
// Err is the link error.
type CollisionError struct {
	Regular bool
	Err     error
}

func (e *CollisionError) Error() string {
	if e.Regular {
		return "target exists: " + e.Err.Error()
	}
	return "target exists and is not a regular file: " + e.Err.Error()
}

func (e *CollisionError) Unwrap() error { return e.Err }

// DeniedError reports a write refused by permissions, with nothing changed.
// Dir is empty when the file itself is the cause, which Reason says: this
// process may not write it (faccessat W_OK with AT_EACCESS, or no write bit
// at all), or it cannot give a new file the file's owner or ACL and the file
// has more than one link, so it is not rewritten in place either. Otherwise
// Dir is the absolute path of the directory that refused publication, the
// cause, while the file could not be rewritten in place. Err wraps EACCES or
// EPERM.
type DeniedError struct {
	Path   string
	Dir    string
	Reason string
	Err    error
}

func (e *DeniedError) Error() string {
	if e.Dir == "" {
		return e.Path + ": " + e.Reason + ": " + e.Err.Error()
	}
	return e.Path + ": the directory " + e.Dir + " does not allow publishing a file in it: " + e.Err.Error()
}

func (e *DeniedError) Unwrap() error { return e.Err }

// InPlace says why a write rewrote the file in place instead of publishing a
// new one; the zero value means it did not.
type InPlace uint8

const (
	// NotInPlace means the write published a new file atomically.
	NotInPlace InPlace = iota
	// InPlaceDirDenied means the directory refused publication (EACCES) but
	// the file was writable.
	InPlaceDirDenied
	// InPlaceMetadata means the process could not give a new file the replaced
	// file's owner, group or extended attributes (ACLs).
	InPlaceMetadata
)

// String is the reason in words, for results and logs.
func (r InPlace) String() string {
	switch r {
	case InPlaceDirDenied:
		return "the directory does not allow this process to publish a new file"
	case InPlaceMetadata:
		return "this process cannot give a new file the owner or ACL the file has"
	default:
		return ""
	}
}

// Result is what a successful Write reports: Stat is the fstat of the
// published file, taken after publication and cleanup; Residue is the error
// of a staging cleanup that failed after publication, which does not fail the
// write (L-88) but leaves a staging entry behind for the caller to log;
// InPlace, when set, says the file was rewritten in place (not atomically)
// and why.
type Result struct {
	Stat    unix.Stat_t
	Residue error
	InPlace InPlace
}

// Write publishes req.Content at req.Name inside req.Parent. A Name that is
// not a single component is EINVAL and touches nothing. The context is
// checked before staging and before publication; once published, the write
// completes. Errors: *DeniedError (nothing changed), a raw *os.PathError for
// staging failures (a staging-name collision is EEXIST, L-80),
// *CollisionError (CreateOnly), a wrapped rename or link error, ctx.Err().
// After any failure no staging entry or temporary name remains unless its
// own cleanup failed too, in which case the error joins both (a double
// fault).
func Write(ctx context.Context, req Request) (Result, error) {
	var res Result
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if !singleName(req.Name) {
		return res, &os.PathError{Op: "write", Path: req.Name, Err: unix.EINVAL}
	}
	p := req.Parent
	if err := req.checkBeneath(p); err != nil {
		return res, err
	}
	w := &writer{req: &req, p: p, fd: -1}
	defer w.close()
	if req.Publication == Replace {
		prior, err := openPrior(p, req.Name)
		if err != nil {
			return res, err
		}
		w.prior = prior
		if err := prior.writable(p, req.Name); err != nil {
			return res, err
		}
	}
	return w.run(ctx)
}

// checkBeneath checks that p is still beneath its handle's directory, unless
// the write is Confined.
func (req *Request) checkBeneath(p *dirfd.Parent) error {
	if req.Confined {
		return nil
	}
	return p.CheckBeneath()
}

// singleName reports whether name is one path component: not empty, not "."
// or "..", no slash. Every syscall addresses req.Name inside the parent's
// descriptor, which confines it only if it cannot walk anywhere.
func singleName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsRune(name, '/')
}

// nameMax is NAME_MAX, the bytes of one path component on Linux.
const nameMax = 255

// cutBytes returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// doubleFault joins a failed write's error with its failed cleanup (spec
// decision 5).
func doubleFault(err, cerr error) error {
	return errors.Join(err, fmt.Errorf("staging cleanup failed: %w", cerr))
}

// Package atomicwrite publishes a file durably and atomically inside an open
// parent directory (a dirfd.Parent): a private staging directory beside the
// target, an exclusive temp file, fsync, publication by rename (replace) or by
// hard link (create, never replace), fsync of the parent, and cleanup. Every
// syscall addresses a single name inside a descriptor, so a confined parent
// keeps the whole publication beneath its root.
package atomicwrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// Staging names (spec section 0): the staging directory is a sibling of the
// target named ".<base>.<pid>.<uuid>.tmpdir" with mode 0700; the temp file
// inside it is "<base>.tmp" with mode 0600, opened exclusively.
const (
	stagingPerm   = 0o700
	tempPerm      = 0o600
	stagingSuffix = ".tmpdir"
	tempSuffix    = ".tmp"
)

// NewFilePerm is the permission of a file that did not exist before (L-79).
const NewFilePerm os.FileMode = 0o600

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

// Request describes one publication.
type Request struct {
	// Parent is the open directory that receives the target.
	Parent *dirfd.Parent
	// Name is the target's single-component name inside Parent.
	Name string
	// Content is written exactly as given.
	Content string
	// Perm is the permission of the published file: the existing file's bits
	// on replace, NewFilePerm otherwise. It is set with fchmod on the open
	// temp file before its fsync, so the umask does not apply and the mode
	// is as durable as the content; the temp file is created 0600, so it
	// already carries Perm while staged (inside the 0700 staging directory).
	Perm os.FileMode
	// Publication is Replace or CreateOnly.
	Publication Publication

	// AfterStage, when set, runs after the temp file is written and fsynced
	// and before publication, with the staging directory's and the temp
	// file's absolute paths. Tests use it to observe staging and to race.
	AfterStage func(stagingDir, tempFile string)
	// stagingName overrides the generated staging name (tests only).
	stagingName string
	// link overrides linkat (tests only).
	link func(oldfd int, oldname string, newfd int, newname string) error
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

// Result is what a successful Write reports: Stat is the fstat of the
// published file, taken after publication and cleanup; Residue is the error
// of a staging cleanup that failed after publication, which does not fail the
// write (L-88) but leaves a staging entry behind for the caller to log.
type Result struct {
	Stat    unix.Stat_t
	Residue error
}

// Write publishes req.Content at req.Name inside req.Parent. A Name that is
// not a single component is EINVAL and touches nothing. The
// context is checked before staging and before publication; once published,
// the write completes. Errors: a raw *os.PathError for staging failures
// (a staging-name collision is EEXIST, L-80), *CollisionError (CreateOnly),
// a wrapped rename or link error, ctx.Err(). After any failure no staging
// entry remains unless its own cleanup failed too, in which case the error
// joins both (a double fault).
func Write(ctx context.Context, req Request) (Result, error) {
	var res Result
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if !singleName(req.Name) {
		return res, &os.PathError{Op: "write", Path: req.Name, Err: unix.EINVAL}
	}
	p := req.Parent
	staging, base := req.stagingName, req.Name
	if staging == "" {
		staging, base = newStagingName(req.Name)
	}
	if err := p.CheckBeneath(); err != nil {
		return res, err
	}
	if err := unix.Mkdirat(p.FD(), staging, stagingPerm); err != nil {
		return res, &os.PathError{Op: "mkdir", Path: p.Join(staging), Err: err}
	}
	s := &stage{parent: p, name: staging, temp: tempName(base), fd: -1}
	defer s.closeFile()
	published, err := s.run(ctx, &req)
	// Cleanup runs before the parent's fsync so that removing the staging
	// directory rides in the same journal commit as the publication.
	cerr := s.cleanup()
	if err == nil && published {
		err = p.Sync()
	}
	if cerr != nil && !published {
		// A double fault: the write failed and so did its cleanup. Report
		// both rather than hide the residue (spec decision 5).
		return res, errors.Join(err, fmt.Errorf("staging cleanup failed: %w", cerr))
	}
	if err != nil {
		return res, err
	}
	res.Residue = cerr
	if err := unix.Fstat(s.fd, &res.Stat); err != nil {
		return res, &os.PathError{Op: "fstat", Path: p.Join(req.Name), Err: err}
	}
	return res, nil
}

// singleName reports whether name is one path component: not empty, not "."
// or "..", no slash. Every syscall addresses req.Name inside the parent's
// descriptor, which confines it only if it cannot walk anywhere.
func singleName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsRune(name, '/')
}

// nameMax is NAME_MAX, the bytes of one path component on Linux.
const nameMax = 255

// newStagingName returns the staging directory name for a target named name,
// ".<base>.<pid>.<uuid>.tmpdir", and the base it uses: name, cut (on a code
// point boundary) so that the whole fits NAME_MAX, which lets a target with a
// name up to NAME_MAX be written.
func newStagingName(name string) (staging, base string) {
	suffix := "." + strconv.Itoa(os.Getpid()) + "." + uuid.NewString() + stagingSuffix
	base = cutBytes(name, nameMax-1-len(suffix))
	return "." + base + suffix, base
}

// tempName is the temp file's name inside a staging directory made for
// base: "<base>.tmp" (base is already short enough).
func tempName(base string) string { return base + tempSuffix }

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

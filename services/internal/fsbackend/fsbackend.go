// Package fsbackend is the one implementation of the fs.Service mechanics
// that both backends mount: resolution by canonical path, stat and lstat,
// text and byte reads, streaming, listing, glob and grep, the atomic write,
// the edit's read-match-write critical section, the per-target mutation lock
// and the cross-process guard. It does not decide where a mutation may run: a
// Mounter does. services/fslocal mounts every mutation on the unconfined host
// handle; services/fssandbox mounts it on a handle confined beneath the
// writable root its fence admits, or refuses it.
//
// Reads and searches are never mounted: they run through the host handle in
// every backend (reads are not fenced, by design).
package fsbackend

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// Settings are the validated settings of a Backend (the caller validates
// them: fslocal.Config.Validate).
type Settings struct {
	// Cwd is the clean absolute directory relative paths resolve against.
	Cwd string
	// DiffBasisMaxBytes is the exclusive bound, in bytes, on both sides of
	// an overwrite for which a write reports the prior content (L-01).
	DiffBasisMaxBytes int64
	// Durability is what a write waits for (spec differences 6, 18).
	Durability atomicwrite.Durability
	// NewOwner, when set, owns every file and directory a mutation creates
	// (spec difference 9); nil leaves the process's own.
	NewOwner *atomicwrite.Owner
}

// Mounter decides where one mutation runs. Mount is called first by
// WriteText and EditText, before any lock, stat or mkdir (Z-5), with the
// caller's target and the policy carried by the call (nil: the deployment
// default). It returns the Mount the mutation runs on, or the error that
// refuses it; a refusal is returned to the caller as is and nothing happens.
type Mounter interface {
	Mount(ctx context.Context, target fs.Target, policy *sandbox.ExecutionPolicy) (Mount, error)
}

// Mount is one admitted mutation.
type Mount struct {
	// Root is the handle every syscall of the mutation (missing parents,
	// staging, temp file, publication, cleanup) resolves beneath. A confined
	// Root makes the kernel refuse any path that leaves it; such an error
	// wraps unix.EXDEV (see dirfd.IsEscape). Target.Key must lie beneath
	// Root, else the mutation fails the same way and nothing happens.
	Root *dirfd.Dir
	// Target is the target mutated: the caller's, or a fresher resolution
	// of its display path (the fence never trusts the caller's key).
	Target fs.Target
	// Run executes the mutation's syscalls, from opening the parent to the
	// publication and its cleanup, and returns what the function returned;
	// the per-target lock is taken before Run is called and released after
	// it returns. Nil runs on the calling goroutine. This is the seam for a
	// confined executor: a Mounter may run the function on an OS thread
	// restricted to Root (a Landlock domain), so the kernel confines the
	// mutation a second time, independently of the handle.
	Run func(mutate func() error) error
	// Roots are the writable roots of Run's Landlock domain, set when Run
	// confines the mutation under one. RunWithin, set with them, runs
	// mutate as Run does but under a domain that also allows writes beneath
	// extra: a move, which spans two mounts (a workspace and a temp root,
	// say), runs once under the union of both mounts' Roots, since a
	// domain of one root refuses a rename out of it.
	Roots     []string
	RunWithin func(extra []string, mutate func() error) error
	// Refused, when set, is called inside Run when the mutation fails,
	// with its error and the directory it addressed its entries in (none
	// when that directory was never opened), while that directory is still
	// open; it returns the error to pass on. A Mounter whose Run confines
	// the mutation under a Landlock domain tells here the domain's refusal
	// of a directory moved out of its root from an ordinary permission
	// error (landlock.Denied).
	Refused func(err error, parents ...*dirfd.Parent) error
	// Published, when set, is called right after the publication, with
	// the directory the target was published in; when it fails, the
	// publication is undone (the replaced file exchanged back, a created
	// file unlinked: atomicwrite.Request.Verify) and its error is the
	// mutation's. A Mounter without a Landlock domain checks here that
	// the directory is still beneath its root.
	Published func(parent *dirfd.Parent) error
	// Admit, when set, is called inside Run right before the publication,
	// once the parent directory is open (missing parents made), with that
	// directory and the target's name; an error refuses the mutation
	// (removing the parents it made) and is the mutation's error. The
	// fence decides protected paths here, by where the descriptor is, not
	// by the path the caller sent.
	Admit func(parent *dirfd.Parent, name string) error
	// Done, when set, is called exactly once with the mutation's error (nil
	// on success) after the mutation ends; it releases what Mount acquired
	// and returns the error the caller sees (the fence turns an escape the
	// kernel refused into a denial).
	Done func(err error) error
}

// run executes mutate through m.Run, or directly when m.Run is nil.
func (m Mount) run(mutate func() error) error {
	if m.Run == nil {
		return mutate()
	}
	return m.Run(mutate)
}

// refused passes a failed mutation's error, with its open parent, to
// m.Refused.
func (m Mount) refused(err error, mu *mutation) error {
	if err == nil || m.Refused == nil {
		return err
	}
	if mu == nil || mu.parent == nil {
		return m.Refused(err)
	}
	return m.Refused(err, mu.parent)
}

// done ends the mount with err and returns the caller's error.
func (m Mount) done(err error) error {
	if m.Done == nil {
		return err
	}
	return m.Done(err)
}

// Backend implements every fs.Service method but SandboxMode, which the
// backend that mounts it reports. It is safe for concurrent use. Its
// per-target mutation lock serializes writes and edits within the process
// only; other processes are excluded by the guard's flock on edits and
// guarded writes.
type Backend struct {
	cfg     Settings
	log     *zap.Logger
	host    *dirfd.Dir
	mounter Mounter
	locks   lockTable

	// reclaimed holds the [dev, ino] of every directory already scanned for
	// abandoned staging directories.
	reclaimed sync.Map
	// syncs shares directory fsyncs among concurrent writes.
	syncs atomicwrite.DirSyncs

	// afterStage, when set by tests, runs between staging and publication.
	afterStage func(stagingDir, tempFile string)
	// treeNames is the names a tree listing reads before it opens no
	// further subdirectory: fs.MaxListTreeNames, lowered by tests.
	treeNames int
}

// New returns a Backend with the validated settings cfg whose mutations run
// where mounter says. A nil log discards logs.
func New(cfg Settings, log *zap.Logger, mounter Mounter) *Backend {
	if log == nil {
		log = zap.NewNop()
	}
	return &Backend{
		cfg:     cfg,
		log:     log,
		host:    dirfd.Host(),
		mounter: mounter,
		locks:   lockTable{m: map[fs.TargetKey]*lockEntry{}},

		treeNames: fs.MaxListTreeNames,
	}
}

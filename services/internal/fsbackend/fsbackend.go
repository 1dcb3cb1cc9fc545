// Package fsbackend is the one implementation of the fs.Service mechanics
// that both backends mount: resolution by canonical path, stat and lstat,
// text and byte reads, streaming, listing, glob and grep, the atomic write,
// the edit's read-match-write critical section, the per-target mutation lock
// and the cross-process guard. It does not decide where a mutation may run: a
// Fence does, through one call per mutation (Mutate) and one per entry
// changed (Change). services/fslocal's fence runs every mutation on the
// unconfined host handle; services/fssandbox's runs it on a handle confined
// beneath the writable root it admits, under a Landlock domain of that root,
// or refuses it.
//
// Reads and searches run through the host handle in every backend (the write
// fence does not confine them), but each open descriptor is shown to the
// Fence's Read before anything is read through it, and each search walk
// passes its entries through the Fence's Gate: the deny-read set (issue 24)
// holds in every mode.
package fsbackend

import (
	"context"
	"errors"
	"os"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fsuser"
	"github.com/dsh-go/harness/internal/search"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/journal"
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
	// (spec difference 9), and every path the backend reaches (resolution,
	// stat, reads, listings, searches, mutations) is reached with its
	// filesystem identity, its uid and gid with no supplementary group, as
	// a root server's commands run (issue 35: the kernel refuses what that
	// user could not reach; a process not running as root keeps its own);
	// nil leaves the process's own.
	NewOwner *atomicwrite.Owner
	// Journal, when set, keeps the prior state of every change a write,
	// edit, move, delete or mkdir makes, durable before the change
	// publishes (issue 25); nil turns journaling off.
	Journal *journal.Journal
}

// Fence confines a Backend's mutations: whether each may run, beneath which
// root handle, on which thread, and what each change of an entry must pass.
// It is the one seam between the core and the backend that mounts it, in the
// shape of os.Root's doInRoot: the core hands the fence its mutation as a
// function, and the fence runs it. services/fslocal's fence is the host, which
// refuses nothing; services/fssandbox's is the sandbox's.
type Fence interface {
	// Mutate admits a mutation of each of targets under policy (nil: the
	// deployment default), before any lock, stat or mkdir (Z-5), and runs op
	// once with their Sites, in order, on a thread under the fence's domain
	// when it has one (a single domain covering every site's root). It
	// returns op's error as the caller should see it (a path the kernel
	// refused to leave a confined root by becomes the fence's denial), or a
	// refusal, in which case op never ran and nothing happened. The sites are
	// valid only while op runs; op must not call Mutate.
	Mutate(ctx context.Context, policy *sandbox.ExecutionPolicy, targets []fs.Target, op func(at []Site) error) error
	// Change decides the entry name in the open directory parent (opened
	// beneath at.Root), by where that directory is now, right before it is
	// changed, and then runs change: an error refuses the entry and change
	// does not run. change gets verify, the check to run right after a
	// publication (atomicwrite.Request.Verify: a failure undoes it), or nil
	// when the fence needs none. Change returns change's error as the caller
	// should see it (the domain's refusal of a directory moved out of its
	// root becomes the fence's denial). With change nil, Change only decides
	// the entry.
	Change(at Site, parent *dirfd.Parent, name string, change func(verify func() error) error) error
	// Read decides whether op may read what the open descriptor fd (whose
	// fstat is st) holds, for target (issue 24): the deny-read decision,
	// taken on the descriptor, never on the path given. With entry set
	// only the entry's own metadata is read (a stat, a listed entry): a
	// denied directory's own passes, what lies inside it does not. It
	// returns nil or the refusal, which the caller returns as it is (an
	// *fs.Error with fs.CodeReadDenied, or the refusal of an approved
	// read whose descriptor names another file). A reading of the data
	// happens only after it returned nil.
	Read(target fs.Target, op string, fd int, st *unix.Stat_t, entry bool) error
	// Gate returns the gate every search walk passes its entries through
	// (search.WalkOptions.Gate); nil refuses nothing.
	Gate() search.Gate
}

// Site is one admitted target of a mutation, as the Fence hands it to the
// mutation: plain data, valid while the mutation runs.
type Site struct {
	// Root is the handle every syscall of the mutation (missing parents,
	// staging, temp file, publication, cleanup) resolves beneath. A confined
	// Root makes the kernel refuse any path that leaves it; such an error
	// wraps unix.EXDEV (see dirfd.IsEscape). Target.Key must lie beneath
	// Root, else the mutation fails the same way and nothing happens.
	Root *dirfd.Dir
	// Target is the target mutated: the caller's, or a fresher resolution
	// of its display path (the fence never trusts the caller's key).
	Target fs.Target
	// Mode is the sandbox mode that admitted the mutation ("" for a fence
	// that has none); the fence's denials name it.
	Mode sandbox.Mode
	// Domain reports whether the mutation runs on a thread under a Landlock
	// domain of Root, which refuses at the syscall every change in a
	// directory that has left Root (atomicwrite.Request.Confined).
	Domain bool
	// Decides reports whether the fence decides the entries the mutation
	// changes (Change may refuse one). When false Change refuses nothing,
	// and the core does not walk a tree to ask about each of its entries
	// before it removes any.
	Decides bool
	// State is the Fence's own state for this site, which Change gets back
	// untouched (the per-mutation protected-path decision, say); the core
	// never reads it.
	State any
}

// mutate runs fn through the fence on targets, once ctx is checked and
// still live; an end of ctx before fn ran (while waiting for the fence's
// thread, say) is op's abort, as it is when fn checks it.
func (f *Backend) mutate(ctx context.Context, policy *sandbox.ExecutionPolicy, targets []fs.Target, op string, fn func(at []Site) error) error {
	ran := false
	err := f.fence.Mutate(ctx, policy, targets, func(at []Site) error {
		ran = true
		if err := checkCtx(ctx, op); err != nil {
			return err
		}
		// On the thread the fence chose: every syscall of the mutation
		// runs there (fsbackend's mutations start no goroutine).
		return f.as.Do(func() error { return fn(at) })
	})
	if _, ok := errors.AsType[*fs.Error](err); !ran && !ok && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return aborted(op, err)
	}
	return err
}

// Backend implements every fs.Service method but SandboxMode, which the
// backend that mounts it reports. It is safe for concurrent use. Its
// per-target mutation lock serializes writes and edits within the process
// only; other processes are excluded by the guard's flock on edits and
// guarded writes.
type Backend struct {
	cfg   Settings
	log   *zap.Logger
	host  *dirfd.Dir
	fence Fence
	locks lockTable
	// as is the filesystem identity of Settings.NewOwner (nil: the
	// process's own).
	as *fsuser.User

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
// through fence. A nil log discards logs.
func New(cfg Settings, log *zap.Logger, fence Fence) *Backend {
	if log == nil {
		log = zap.NewNop()
	}
	var as *fsuser.User
	if o := cfg.NewOwner; o != nil && os.Geteuid() == 0 {
		// Only root may take another identity; a server of an ordinary
		// user reaches what that user may, already.
		as = &fsuser.User{UID: o.UID, GID: o.GID}
	}
	return &Backend{
		as:    as,
		cfg:   cfg,
		log:   log,
		host:  dirfd.Host(),
		fence: fence,
		locks: lockTable{m: map[fs.TargetKey]*lockEntry{}},

		treeNames: fs.MaxListTreeNames,
	}
}

package fssandbox

import (
	"context"
	"errors"
	"path"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/landlock"
	"github.com/dsh-go/harness/internal/search"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/internal/fsbackend"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// errOutsideRoots is the cause of a denial at check time: the fresh
// canonical target is beneath no writable root.
var errOutsideRoots = errors.New("target is outside every writable root")

// fenced is the fence as the core's fsbackend.Fence: every mutation enters
// the fence before anything else happens, and every entry it changes passes
// the fence's decision right before it does.
type fenced struct{ f *FileSystem }

// Mutate admits or denies a mutation of each target under policy (see
// enter), in order; the admitted mutation then runs beneath the fences'
// roots, in one call on a thread of the Landlock domain of every confined
// root among them (a move spans two writable roots, and a domain of one
// refuses a rename out of it), or on the calling goroutine without Landlock
// or under danger-full-access. Its error passes each fence's check, the last
// entered first, before that fence is released.
func (m fenced) Mutate(ctx context.Context, policy *sandbox.ExecutionPolicy, targets []fs.Target, op func(at []fsbackend.Site) error) (err error) {
	fences := make([]*fence, 0, len(targets))
	defer func() {
		for i := len(fences) - 1; i >= 0; i-- {
			err = fences[i].check(err)
			fences[i].release()
		}
	}()
	for _, target := range targets {
		fc, err := m.f.enter(ctx, target, policy)
		if err != nil {
			return err
		}
		fences = append(fences, fc)
	}
	at := make([]fsbackend.Site, len(fences))
	var roots []string
	for i, fc := range fences {
		confined := fc.root.Confined()
		at[i] = fsbackend.Site{
			Root: fc.root, Target: fc.target, Mode: fc.mode,
			// Every site decides its entries: the deny-read set holds in
			// every mode (Change), the protected paths in a confined root.
			Domain: confined && m.f.domains != nil, Decides: true, State: fc,
		}
		if confined {
			roots = append(roots, fc.root.Path())
		}
	}
	if m.f.domains == nil || len(roots) == 0 {
		// No Landlock (the publication is checked after the fact: see
		// Change), or danger-full-access on the host handle.
		return op(at)
	}
	return fences[0].runConfined(ctx, m.f.domains, roots, func() error { return op(at) })
}

// Change decides the entry name in the open directory parent, in every mode
// against the deny-read set (readFence.entryDenied: the entry, by its real
// path, neither denied nor holding an existing denied path), beneath a
// confined root against the protected paths (admitEntry), and runs change.
// Under a Landlock domain, the
// domain's refusal of a parent that has left the root is a denial, any other
// error (an EACCES with the parent still inside included) the ordinary one.
// Without a domain, a directory moved out between the last check and the
// publication takes the file along, so change gets the check to run after
// the publication, which undoes it when the parent has left the root (the
// check's EXDEV is a denial: see check).
func (m fenced) Change(at fsbackend.Site, parent *dirfd.Parent, name string, change func(verify func() error) error) error {
	if at.Decides {
		fc, ok := at.State.(*fence)
		if !ok {
			// Fail closed: a site this fence did not make decides nothing.
			return denied(at.Target, at.Mode, errors.New("the mutation did not enter the fence"))
		}
		if err := m.f.reads.entryDenied(at.Target, parent, name); err != nil {
			return err
		}
		if !at.Root.Confined() {
			return runChange(at, parent, change, false)
		}
		if err := fc.admitEntry(at, parent, name); err != nil {
			return err
		}
	}
	return runChange(at, parent, change, at.Decides && at.Root.Confined())
}

// runChange runs change (nil: nothing), with the publication check when
// checked and the site has no domain (see Change).
func runChange(at fsbackend.Site, parent *dirfd.Parent, change func(verify func() error) error, checked bool) error {
	if change == nil {
		return nil
	}
	var verify func() error
	if checked && !at.Domain {
		verify = parent.CheckBeneath
	}
	err := change(verify)
	if at.Domain && landlock.Denied(err, parent) {
		return denied(at.Target, at.Mode, err)
	}
	return err
}

// runConfined runs fn in one call on a thread of domains whose Landlock
// domain allows writes only beneath roots (the fences' writable roots, each
// admitted). A thread that cannot be had because ctx ended returns ctx's
// error, which the core reports as its operation's abort.
func (fc *fence) runConfined(ctx context.Context, domains *landlock.Executor, roots []string, fn func() error) error {
	ran := false
	err := domains.Run(ctx, roots, func() error {
		ran = true
		return fn()
	})
	switch {
	case ran:
		return err
	case ctx.Err() != nil:
		if errors.Is(err, ctx.Err()) {
			return err
		}
		return errors.Join(ctx.Err(), err)
	default:
		// Fail closed: a thread that cannot be confined to the root
		// (the root vanished, the executor is closed) mutates nothing.
		return denied(fc.target, fc.mode, err)
	}
}

// fence is one admitted mutation: the handle it runs beneath, the target it
// mutates, and the mode that admitted it.
type fence struct {
	root    *dirfd.Dir
	target  fs.Target
	mode    sandbox.Mode
	release func()
	// protection decides the protected paths of the mutation
	// (checkProtected), from one search of the call's writable roots; set
	// under workspace-write only.
	protection *sandboxpolicy.Protection
}

// enter decides whether a mutation of target may run under policy (nil: the
// deployment default) and returns its fence. It runs before any stat, lock or
// mkdir (Z-5).
func (f *FileSystem) enter(ctx context.Context, target fs.Target, policy *sandbox.ExecutionPolicy) (*fence, error) {
	pol := f.policy.Default()
	if policy != nil {
		pol = *policy
	}
	f.life.Lock()
	if f.closed {
		f.life.Unlock()
		// Fail closed: a closed backend mutates nothing.
		return nil, denied(target, pol.Mode, errClosed)
	}
	f.inflight.Add(1)
	f.life.Unlock()
	fc, err := f.admit(ctx, target, pol)
	if err != nil {
		f.inflight.Done()
		return nil, err
	}
	release := fc.release
	fc.release = func() {
		release()
		f.inflight.Done()
	}
	return fc, nil
}

// errClosed is the cause of a denial by a closed backend.
var errClosed = errors.New("the filesystem is closed")

// admit applies the policy's mode to one mutation, after the kernel's
// symlink rule (checkSymlinks), which no mode lifts. The target is resolved
// again first when its display path is relative or not clean (hand-built:
// Resolve makes none), so the rule and the fence judge the clean absolute
// path the mutation reaches, not a ".." the kernel's walk never gets to or a
// path relative to the process's working directory; and under
// workspace-write also when its key differs from its display path (see
// enterWorkspace).
func (f *FileSystem) admit(ctx context.Context, target fs.Target, pol sandbox.ExecutionPolicy) (*fence, error) {
	// The deny-read set holds in every mode: a credential is not
	// mutated (its old content would be read, or it would be moved where
	// it can be read), decided first on the caller's target, then on the
	// fresh one.
	if err := f.reads.mutationDenied(target, "write"); err != nil {
		return nil, err
	}
	if pol.Mode == sandbox.DangerFullAccess || pol.Mode == sandbox.WorkspaceWrite {
		dp := target.DisplayPath
		stale := pol.Mode == sandbox.WorkspaceWrite && string(target.Key) != dp
		if stale || !path.IsAbs(dp) || path.Clean(dp) != dp {
			fresh, err := f.Resolve(ctx, dp, fs.ResolveOptions{})
			if err != nil {
				return nil, err
			}
			target = fresh
			if err := f.reads.mutationDenied(target, "write"); err != nil {
				return nil, err
			}
		}
		if err := checkSymlinks(target.DisplayPath); err != nil {
			return nil, err
		}
	}
	switch pol.Mode {
	case sandbox.DangerFullAccess:
		return &fence{root: f.host, target: target, mode: pol.Mode, release: func() {}}, nil
	case sandbox.WorkspaceWrite:
		return f.enterWorkspace(ctx, target, pol)
	default:
		// Fail closed: read-only, and any mode this build does not know.
		return nil, denied(target, pol.Mode, nil)
	}
}

// enterWorkspace picks the writable root that contains the fresh canonical
// target (S-13): the caller's key may be stale, so it is never trusted. A key that differs from
// the display path (a symlink on the way, or a stale key) was resolved again
// from the display path by admit. A key equal to the display path is used as
// it is, without resolving it a second time in user space (issue 15: one
// resolution per call): every component of it is then
// addressed beneath the root's handle, where the kernel resolves it at the
// syscall: a parent replaced since by a relative symlink that stays beneath
// the root is followed, one that leaves it or any absolute symlink is
// refused (fail closed), a final symlink planted since is replaced by the
// publication, never followed; and the protected-path decision is taken
// again on the open parent (admitEntry).
func (f *FileSystem) enterWorkspace(ctx context.Context, target fs.Target, pol sandbox.ExecutionPolicy) (*fence, error) {
	for _, root := range pol.WritableRoots() {
		if !dirfd.Beneath(root, string(target.Key)) {
			continue
		}
		fc := &fence{target: target, mode: pol.Mode, release: func() {}, protection: f.policy.Protection(ctx, pol)}
		// The early check, on the fresh canonical path: nothing is made
		// for a protected target. The decisive one runs on the open
		// parent (admitEntry).
		if err := fc.checkProtected(root, relTo(root, string(target.Key))); err != nil {
			return nil, denied(target, pol.Mode, err)
		}
		if d, ok := f.pinned[root]; ok {
			fc.root = d
			return fc, nil
		}
		d, err := dirfd.OpenBeneath(root)
		if err != nil {
			// Fail closed: an unopenable root grants nothing.
			return nil, denied(target, pol.Mode, err)
		}
		fc.root, fc.release = d, func() { _ = d.Close() }
		return fc, nil
	}
	return nil, denied(target, pol.Mode, errOutsideRoots)
}

// check turns an escape the kernel refused at syscall time into a denial.
func (fc *fence) check(err error) error {
	if err != nil && fc.root.Confined() && dirfd.IsEscape(err) {
		return denied(fc.target, fc.mode, err)
	}
	return err
}

// Read is the deny-read decision on an open descriptor (see readFence).
func (m fenced) Read(target fs.Target, op string, fd int, st *unix.Stat_t, entry bool) error {
	return m.f.reads.decide(target, op, fd, st, entry)
}

// Gate keeps every search walk out of the deny-read set.
func (m fenced) Gate() search.Gate { return m.f.reads }

var _ fsbackend.Fence = (*fenced)(nil)

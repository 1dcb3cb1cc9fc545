package fssandbox

import (
	"context"
	"errors"
	"path"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/landlock"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/internal/fsbackend"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// errOutsideRoots is the cause of a denial at check time: the fresh
// canonical target is beneath no writable root.
var errOutsideRoots = errors.New("target is outside every writable root")

// fenced is the fence as the core's Mounter: every write and edit enters the
// fence before anything else happens.
type fenced struct{ f *FileSystem }

// Mount admits or denies one mutation of target under policy (see enter);
// an admitted mutation runs beneath the fence's root, on the calling
// goroutine, and its error passes check before the fence is released.
func (m fenced) Mount(ctx context.Context, target fs.Target, policy *sandbox.ExecutionPolicy) (fsbackend.Mount, error) {
	fc, err := m.f.enter(ctx, target, policy)
	if err != nil {
		return fsbackend.Mount{}, err
	}
	mount := fsbackend.Mount{
		Root:   fc.root,
		Target: fc.target,
		Done: func(err error) error {
			defer fc.release()
			return fc.check(err)
		},
	}
	if fc.root.Confined() {
		mount.Admit = fc.admitProtected()
	}
	switch {
	case !fc.root.Confined():
	case m.f.domains != nil:
		mount.Run = func(mutate func() error) error { return fc.runConfined(ctx, m.f.domains, nil, mutate) }
		mount.Roots = []string{fc.root.Path()}
		mount.RunWithin = func(extra []string, mutate func() error) error {
			return fc.runConfined(ctx, m.f.domains, extra, mutate)
		}
		mount.Refused = fc.refused
	default:
		// No Landlock: a directory moved out between the last check and
		// the publication takes the file along, so the publication is
		// checked after the fact and undone (the check's EXDEV is a
		// denial).
		mount.Published = (*dirfd.Parent).CheckBeneath
	}
	return mount, nil
}

// runConfined runs the whole mutation in one call on a thread of domains
// whose Landlock domain allows writes only beneath the fence's root and
// extra (the other writable root of a move, itself admitted by the fence).
func (fc *fence) runConfined(ctx context.Context, domains *landlock.Executor, extra []string, mutate func() error) error {
	ran := false
	err := domains.Run(ctx, append([]string{fc.root.Path()}, extra...), func() error {
		ran = true
		return mutate()
	})
	switch {
	case ran:
		return err
	case ctx.Err() != nil:
		return &fs.Error{Code: fs.CodeAborted, Op: "write", Message: "write aborted", Err: err}
	default:
		// Fail closed: a thread that cannot be confined to the root
		// (the root vanished, the executor is closed) mutates nothing.
		return denied(fc.target, fc.mode, err)
	}
}

// refused classifies a failed confined mutation: the Landlock domain's
// refusal of a parent that has left the root is a denial; any other error,
// an EACCES with every parent still inside included, is the ordinary one.
func (fc *fence) refused(err error, parents ...*dirfd.Parent) error {
	if landlock.Denied(err, parents...) {
		return denied(fc.target, fc.mode, err)
	}
	return err
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
	if pol.Mode == sandbox.DangerFullAccess || pol.Mode == sandbox.WorkspaceWrite {
		dp := target.DisplayPath
		stale := pol.Mode == sandbox.WorkspaceWrite && string(target.Key) != dp
		if stale || !path.IsAbs(dp) || path.Clean(dp) != dp {
			fresh, err := f.Resolve(ctx, dp, fs.ResolveOptions{})
			if err != nil {
				return nil, err
			}
			target = fresh
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
// again on the open parent (admitProtected).
func (f *FileSystem) enterWorkspace(ctx context.Context, target fs.Target, pol sandbox.ExecutionPolicy) (*fence, error) {
	for _, root := range sandbox.WritableRoots(pol, f.policy.Roots()) {
		if !dirfd.Beneath(root, string(target.Key)) {
			continue
		}
		fc := &fence{target: target, mode: pol.Mode, release: func() {}, protection: f.policy.Protection(ctx, pol)}
		// The early check, on the fresh canonical path: nothing is made
		// for a protected target. The decisive one runs on the open
		// parent (admitProtected).
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

package fssandbox

import (
	"context"
	"errors"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/internal/fsbackend"
	"github.com/dsh-go/harness/services/sandbox"
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
	return fsbackend.Mount{
		Root:   fc.root,
		Target: fc.target,
		Done: func(err error) error {
			defer fc.release()
			return fc.check(err)
		},
	}, nil
}

// fence is one admitted mutation: the handle it runs beneath, the target it
// mutates, and the mode that admitted it.
type fence struct {
	root    *dirfd.Dir
	target  fs.Target
	shown   fs.Target // the caller's target, for denial messages
	mode    sandbox.Mode
	release func()
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

// admit applies the policy's mode to one mutation.
func (f *FileSystem) admit(ctx context.Context, target fs.Target, pol sandbox.ExecutionPolicy) (*fence, error) {
	switch pol.Mode {
	case sandbox.DangerFullAccess:
		return &fence{root: f.host, target: target, shown: target, mode: pol.Mode, release: func() {}}, nil
	case sandbox.WorkspaceWrite:
		return f.enterWorkspace(ctx, target, pol)
	default:
		// Fail closed: read-only, and any mode this build does not know.
		return nil, denied(target, pol.Mode, nil)
	}
}

// enterWorkspace re-resolves the display path now and picks the writable
// root that contains the fresh canonical target (S-13): the caller's key may
// be stale, so it is never used.
func (f *FileSystem) enterWorkspace(ctx context.Context, target fs.Target, pol sandbox.ExecutionPolicy) (*fence, error) {
	fresh, err := f.Resolve(ctx, target.DisplayPath, fs.ResolveOptions{})
	if err != nil {
		return nil, err
	}
	for _, root := range sandbox.WritableRoots(pol, f.policy.Roots()) {
		if !dirfd.Beneath(root, string(fresh.Key)) {
			continue
		}
		if d, ok := f.pinned[root]; ok {
			return &fence{root: d, target: fresh, shown: target, mode: pol.Mode, release: func() {}}, nil
		}
		d, err := dirfd.OpenBeneath(root)
		if err != nil {
			// Fail closed: an unopenable root grants nothing.
			return nil, denied(target, pol.Mode, err)
		}
		return &fence{root: d, target: fresh, shown: target, mode: pol.Mode, release: func() { _ = d.Close() }}, nil
	}
	return nil, denied(target, pol.Mode, errOutsideRoots)
}

// check turns an escape the kernel refused at syscall time into a denial.
func (fc *fence) check(err error) error {
	if err != nil && fc.root.Confined() && dirfd.IsEscape(err) {
		return denied(fc.shown, fc.mode, err)
	}
	return err
}

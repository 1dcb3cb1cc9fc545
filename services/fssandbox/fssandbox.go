// Package fssandbox is the confining backend of fs.Service: the backend core
// every backend shares (services/internal/fsbackend, which fslocal mounts on
// the host handle), with every write and edit fenced by the per-call sandbox
// policy. Reads, resolution, stat and listing are the core's, unchanged.
// Under workspace-write the whole mutation (missing parents, staging, temp
// file, publication, cleanup) runs through a directory handle on the writable
// root that the kernel confines with openat2 RESOLVE_BENEATH, so a path that
// leaves the root, at check time or at syscall time, is FS_SANDBOX_DENIED and
// creates nothing; it runs in one call on an OS thread under a Landlock
// domain of that root, so a directory moved out of the root mid-write is
// refused at the syscall (without Landlock: a replace published by exchange,
// checked after publication and undone). Protected paths inside the root
// (version-control metadata, the policy's Protect patterns) are denied, decided on the open
// parent directory; and in every mode that writes, another user's symlink in
// a sticky world-writable directory is not followed.
//
// Each mutation is fenced as follows (S-02..S-18): the call's policy, or the
// deployment default when nil, decides. read-only (and any unknown mode)
// denies; danger-full-access mutates the target as fslocal would;
// workspace-write re-resolves target.DisplayPath now, requires the fresh
// canonical target to lie beneath a writable root, and mutates the fresh
// target through a handle confined beneath that root. A denial is
// CodeSandboxDenied carrying the mode, `cannot write "<dp>": file access
// denied under <mode> mode` (edits too, Z-6), and nothing is created. Other
// errors are those of fslocal.
package fssandbox

import (
	"errors"
	"fmt"
	"sync"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/landlock"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/internal/fsbackend"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// backend is the embedded core, under an unexported name so that only its
// fs.Service methods are promoted and the field itself is not reachable.
type backend = fsbackend.Backend

// FileSystem is the confining backend: every fs.Service method of the shared
// core, with each write and edit mounted through the fence (see the package
// doc); no method mutates outside it. It is safe for concurrent use. Close
// releases the pinned root handles.
type FileSystem struct {
	*backend
	policy *sandboxpolicy.Service
	host   *dirfd.Dir
	// pinned holds a handle on each writable root known at construction
	// (the temp roots and the fallback workspace root), opened once, so
	// retargeting a symlink in a configured root's spelling later does not
	// move the fence.
	pinned map[string]*dirfd.Dir
	// life guards closed; inflight counts the mutations in flight, so
	// Close closes no handle under a running call (a closed descriptor
	// number can be reused by another open). A move enters the fence twice
	// (source and destination): a counter, unlike a read lock, never blocks
	// the second entry behind a waiting Close. After Close every mutation is
	// denied.
	life     sync.Mutex
	inflight sync.WaitGroup
	closed   bool
	// domains runs each workspace-write mutation on a thread whose Landlock
	// domain allows writes only beneath its writable root; nil when
	// Landlock is unavailable or turned off, and noLandlock says why.
	domains    *landlock.Executor
	noLandlock error
	// protect is the protected paths inside every writable root.
	protect sandbox.ProtectedPaths
	// reads decides every read against the deny-read set (issue 24).
	reads *readFence
}

// Landlock settings of Config.Landlock.
const (
	// LandlockAuto confines mutations under Landlock where the kernel
	// allows it, else uses the fallback (the default; "" means it too).
	LandlockAuto = "auto"
	// LandlockOff always uses the fallback, as on a kernel without
	// Landlock.
	LandlockOff = "off"
)

// Config is the fence's own configuration. The zero value is the default.
type Config struct {
	// Landlock is LandlockAuto ("" too) or LandlockOff.
	Landlock string
}

// errLandlockOff is why a fence configured with LandlockOff has no domain.
var errLandlockOff = errors.New("turned off by configuration (landlock: off)")

// New returns a confining backend configured by cfg (validated as fslocal
// validates it) and fence, its mutations fenced by policy. Roots that do not
// exist yet are opened when first used. Errors: a nil policy, an invalid cfg,
// a fence.Landlock other than "", LandlockAuto or LandlockOff. The protected
// paths are the policy's (sandboxpolicy.Config.Protect), the same set its
// approval prompts and the command runner use.
func New(policy *sandboxpolicy.Service, cfg fslocal.Config, fence Config, log *zap.Logger) (*FileSystem, error) {
	if policy == nil {
		return nil, errors.New("fssandbox: a sandboxpolicy.Service is required")
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	f := &FileSystem{policy: policy, host: dirfd.Host(), pinned: map[string]*dirfd.Dir{}, protect: policy.Protected(), reads: newReadFence(policy)}
	switch fence.Landlock {
	case "", LandlockAuto:
		f.domains, f.noLandlock = landlock.New(landlock.Config{})
	case LandlockOff:
		f.noLandlock = errLandlockOff
	default:
		return nil, fmt.Errorf("fssandbox: landlock setting %q: want %s or %s", fence.Landlock, LandlockAuto, LandlockOff)
	}
	switch {
	case errors.Is(f.noLandlock, errLandlockOff):
		log.Debug("Landlock turned off: publications are checked after the fact and undone")
	case f.noLandlock != nil:
		log.Info("mutations are not confined by Landlock; publications are checked after the fact and undone", zap.Error(f.noLandlock))
	}
	f.backend = fsbackend.New(cfg.CoreSettings(), log.Named("fssandbox"), fenced{f})
	static := append([]string{policy.Default().WorkspaceRoot}, policy.Default().Roots()...)
	for _, root := range static {
		if _, ok := f.pinned[root]; ok {
			continue
		}
		if d, err := dirfd.OpenBeneath(root); err == nil {
			f.pinned[root] = d
		}
	}
	return f, nil
}

// Close waits for the mutations in flight, then releases the pinned root
// handles; later mutations are denied.
func (f *FileSystem) Close() error {
	f.life.Lock()
	f.closed = true
	f.life.Unlock()
	f.inflight.Wait()
	var errs []error
	for root, d := range f.pinned {
		errs = append(errs, d.Close())
		delete(f.pinned, root)
	}
	if f.domains != nil {
		errs = append(errs, f.domains.Close())
	}
	return errors.Join(errs...)
}

// Layers are the enforcement layers of a FileSystem under workspace-write,
// as `harness policy` reports them. The policy check and the confined handle
// are always active.
type Layers struct {
	// LandlockABI is the Landlock ABI of the domains mutations run under;
	// zero when there is none.
	LandlockABI int
	// NoLandlock says why there is no domain ("" when there is one); the
	// fallback then checks each publication after the fact and undoes it.
	NoLandlock string
	// Protected are the protected paths inside each writable root
	// (sandbox.ProtectedPaths.Describe).
	Protected []string
}

// Layers reports the enforcement layers active in f.
func (f *FileSystem) Layers() Layers {
	l := Layers{Protected: f.protect.Describe()}
	if f.domains != nil {
		l.LandlockABI = f.domains.ABI()
	} else {
		l.NoLandlock = f.noLandlock.Error()
	}
	return l
}

// SandboxMode reports the deployment default mode and that this backend
// confines (S-01).
func (f *FileSystem) SandboxMode() (sandbox.Mode, bool) { return f.policy.Default().Mode, true }

// Params are the fx inputs of Module.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Policy    *sandboxpolicy.Service
	Config    fslocal.Config `optional:"true"`
	Fence     Config         `optional:"true"`
	Logger    *zap.Logger    `optional:"true"`
}

func newFromParams(p Params) (*FileSystem, error) {
	f, err := New(p.Policy, p.Config, p.Fence, p.Logger)
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.StopHook(f.Close))
	return f, nil
}

// Module provides the confining backend as fs.Service, in place of
// fslocal.Module; it needs a *sandboxpolicy.Service (sandboxpolicy.Module)
// and takes an optional fslocal.Config.
var Module = fx.Module("fssandbox",
	fx.Provide(fx.Annotate(newFromParams, fx.As(new(fs.Service)))),
	fx.Invoke(func(fs.Service) {}),
)

var _ fs.Service = (*FileSystem)(nil)

// denied is the error of a mutation the fence refuses.
func denied(target fs.Target, mode sandbox.Mode, cause error) *fs.Error {
	return &fs.Error{
		Code:    fs.CodeSandboxDenied,
		Op:      "write",
		Path:    target.DisplayPath,
		Mode:    mode,
		Message: fmt.Sprintf("cannot write %q: file access denied under %s mode", target.DisplayPath, mode),
		Err:     cause,
	}
}

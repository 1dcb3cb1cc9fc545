// Package fssandbox is the confining backend of fs.Service: the backend core
// every backend shares (services/internal/fsbackend, which fslocal mounts on
// the host handle), with every write and edit fenced by the per-call sandbox
// policy. Reads, resolution, stat and listing are the core's, unchanged.
// Under workspace-write the whole mutation (missing parents, staging, temp
// file, publication, cleanup) runs through a directory handle on the writable
// root that the kernel confines with openat2 RESOLVE_BENEATH, so a path that
// leaves the root, at check time or at syscall time, is FS_SANDBOX_DENIED and
// creates nothing.
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
}

// New returns a confining backend configured by cfg (validated as fslocal
// validates it), its mutations fenced by policy. Roots that do not exist yet
// are opened when first used. Errors: a nil policy, an invalid cfg.
func New(policy *sandboxpolicy.Service, cfg fslocal.Config, log *zap.Logger) (*FileSystem, error) {
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
	f := &FileSystem{policy: policy, host: dirfd.Host(), pinned: map[string]*dirfd.Dir{}}
	settings := fsbackend.Settings{Cwd: cfg.Cwd, DiffBasisMaxBytes: cfg.DiffBasisMaxBytes}
	f.backend = fsbackend.New(settings, log.Named("fssandbox"), fenced{f})
	static := append([]string{policy.Default().WorkspaceRoot}, policy.Roots()...)
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
	return errors.Join(errs...)
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
	Logger    *zap.Logger    `optional:"true"`
}

func newFromParams(p Params) (*FileSystem, error) {
	f, err := New(p.Policy, p.Config, p.Logger)
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

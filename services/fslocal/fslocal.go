// Package fslocal is the bare local backend of fs.Service: it reads and
// writes the host filesystem as the process sees it and never confines a
// mutation. It mounts the backend core every backend shares
// (services/internal/fsbackend) on the unconfined host handle of
// internal/dirfd; fssandbox mounts the very same core on a handle confined
// beneath a writable root.
package fslocal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/search"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/internal/fsbackend"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandbox"
)

// DefaultDiffBasisMaxBytes is the default exclusive bound, in bytes, on both
// sides of an overwrite for which a write reports the prior content (L-01).
const DefaultDiffBasisMaxBytes = 10 << 20

// MaxDiffBasisBytes is the largest accepted DiffBasisMaxBytes: 1 GiB. A diff
// basis is held in memory as bytes and as text, so a larger bound would let
// one write pin several GiB.
const MaxDiffBasisBytes = 1 << 30

// Config configures the local backend. The zero value is valid.
type Config struct {
	// Cwd is the absolute directory relative paths resolve against; empty
	// means the process working directory at construction (L-01).
	Cwd string `yaml:"cwd" json:"cwd"`
	// DiffBasisMaxBytes is the exclusive bound, in bytes, on the prior file
	// size and the new content size for a write to report Before; zero means
	// DefaultDiffBasisMaxBytes (L-03, L-69..L-72).
	DiffBasisMaxBytes int64 `yaml:"diffBasisMaxBytes" json:"diffBasisMaxBytes"`
	// Durability is what a write waits for before it returns:
	// DurabilityFull (the default; also "") or DurabilityAtomic (spec
	// differences 6, 18).
	Durability Durability `yaml:"durability" json:"durability"`
	// NewOwner, when set, owns every file and directory a mutation creates
	// (spec difference 9: a server running as root in another user's
	// workspace; see RootOwner), and the backend acts as that user: every
	// path it reaches is reached with the user's filesystem uid and gid and
	// no supplementary group (issue 35; internal/fsuser), so the kernel
	// refuses what the user could not reach. nil leaves the process's own.
	// A replaced file keeps its owner either way.
	NewOwner *Owner `yaml:"newOwner" json:"newOwner"`
	// Journal, when set, keeps the prior state of every change a file tool
	// makes before it publishes (issue 25; open it with Sync when
	// Durability is full); nil turns journaling off. The caller owns it.
	Journal *journal.Journal `yaml:"-" json:"-"`
}

// Durability is a level of durability of a write (spec differences 6, 18).
type Durability string

const (
	// DurabilityFull fsyncs the new file before publication and its
	// directory after it (one directory fsync shared by the writes that
	// publish into it at once): a write that returned survives power loss.
	DurabilityFull Durability = "full"
	// DurabilityAtomic publishes atomically without fsync: a write survives
	// a crash of the process, not of the machine.
	DurabilityAtomic Durability = "atomic"
)

// Durabilities are the accepted values of Config.Durability.
var Durabilities = []Durability{DurabilityFull, DurabilityAtomic}

// Owner is a user id and a group id.
type Owner struct {
	UID int `yaml:"uid" json:"uid"`
	GID int `yaml:"gid" json:"gid"`
}

// RootOwner returns the owner new files and directories beneath the
// workspace root root should take, and the user the backend acts as
// (Config.NewOwner): root's owner when this process runs as root (effective
// uid 0) and root belongs to another user, else nil (spec difference 9;
// the user a root server's commands run as). Errors: root cannot be
// stat'ed.
func RootOwner(root string) (*Owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: root, Err: err}
	}
	if st.Uid == 0 {
		return nil, nil
	}
	return &Owner{UID: int(st.Uid), GID: int(st.Gid)}, nil
}

// Validate returns cfg with defaults applied, or an error naming the bad
// field (L-03).
func (cfg Config) Validate() (Config, error) {
	if cfg.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return cfg, fmt.Errorf("fslocal: Cwd is empty and the working directory is unknown: %w", err)
		}
		cfg.Cwd = wd
	}
	if !filepath.IsAbs(cfg.Cwd) {
		return cfg, fmt.Errorf("fslocal: Cwd must be an absolute path, got %q", cfg.Cwd)
	}
	cfg.Cwd = filepath.Clean(cfg.Cwd)
	if cfg.DiffBasisMaxBytes == 0 {
		cfg.DiffBasisMaxBytes = DefaultDiffBasisMaxBytes
	}
	if cfg.DiffBasisMaxBytes < 0 || cfg.DiffBasisMaxBytes > MaxDiffBasisBytes {
		return cfg, fmt.Errorf("fslocal: DiffBasisMaxBytes must be a positive integer no greater than %d, got %d",
			int64(MaxDiffBasisBytes), cfg.DiffBasisMaxBytes)
	}
	switch cfg.Durability {
	case "":
		cfg.Durability = DurabilityFull
	case DurabilityFull, DurabilityAtomic:
	default:
		return cfg, fmt.Errorf("fslocal: Durability must be %q or %q, got %q", DurabilityFull, DurabilityAtomic, cfg.Durability)
	}
	if o := cfg.NewOwner; o != nil && (o.UID < 0 || o.GID < 0) {
		return cfg, fmt.Errorf("fslocal: NewOwner must have non-negative ids, got %d:%d", o.UID, o.GID)
	}
	return cfg, nil
}

// backend is the embedded core, under an unexported name so that only its
// fs.Service methods are promoted and the field itself is not reachable.
type backend = fsbackend.Backend

// FileSystem is the local backend: every fs.Service method of the shared
// core, with each mutation mounted on the host handle. It is safe for
// concurrent use. Its per-target mutation lock serializes writes and edits
// within the process only; across processes, edits and guarded writes take
// an advisory flock on the target (see the README). WriteOptions.Policy and
// EditRequest.Policy are ignored: the bare backend never confines.
type FileSystem struct {
	*backend
	cfg Config
}

// New returns a FileSystem for cfg, which is validated first. A nil log
// discards logs.
func New(cfg Config, log *zap.Logger) (*FileSystem, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	core := fsbackend.New(cfg.CoreSettings(), log.Named("fslocal"), host{dirfd.Host()})
	return &FileSystem{backend: core, cfg: cfg}, nil
}

// CoreSettings returns the settings of the backend core that every backend
// mounts (services/internal/fsbackend) for the validated cfg: fslocal and
// fssandbox build their cores from this one conversion, so --durability
// (spec difference 18) and --workspace-owner (spec difference 9) mean the
// same under both.
func (cfg Config) CoreSettings() fsbackend.Settings {
	s := fsbackend.Settings{Cwd: cfg.Cwd, DiffBasisMaxBytes: cfg.DiffBasisMaxBytes}
	if cfg.Durability == DurabilityAtomic {
		s.Durability = atomicwrite.Atomic
	}
	if o := cfg.NewOwner; o != nil {
		s.NewOwner = &atomicwrite.Owner{UID: o.UID, GID: o.GID}
	}
	s.Journal = cfg.Journal
	return s
}

// Config returns the validated configuration.
func (f *FileSystem) Config() Config { return f.cfg }

// SandboxMode reports that the bare backend does not confine.
func (f *FileSystem) SandboxMode() (sandbox.Mode, bool) { return "", false }

// Params are the fx inputs of Module. Config and Logger are optional.
type Params struct {
	fx.In

	Config Config      `optional:"true"`
	Logger *zap.Logger `optional:"true"`
}

func newFromParams(p Params) (*FileSystem, error) { return New(p.Config, p.Logger) }

// Module provides the bare backend as fs.Service and validates its Config
// when the app is built. Supply an fslocal.Config to configure it.
var Module = fx.Module("fslocal",
	fx.Provide(fx.Annotate(newFromParams, fx.As(new(fs.Service)))),
	// Build the backend even when nothing consumes it yet, so a bad Config
	// fails the app at construction, not at first use (L-03).
	fx.Invoke(func(fs.Service) {}),
)

// host is the trivial fsbackend.Fence: every mutation runs on the
// unconfined host handle, on the caller's targets and the calling goroutine;
// it ignores the policy, refuses nothing and decides no entry.
type host struct{ dir *dirfd.Dir }

// Mutate runs op on the host handle with the caller's targets.
func (h host) Mutate(_ context.Context, _ *sandbox.ExecutionPolicy, targets []fs.Target, op func([]fsbackend.Site) error) error {
	at := make([]fsbackend.Site, len(targets))
	for i, t := range targets {
		at[i] = fsbackend.Site{Root: h.dir, Target: t}
	}
	return op(at)
}

// Change runs change with no check after publication.
func (host) Change(_ fsbackend.Site, _ *dirfd.Parent, _ string, change func(verify func() error) error) error {
	if change == nil {
		return nil
	}
	return change(nil)
}

// Read refuses nothing: the bare backend has no deny-read set.
func (host) Read(fs.Target, string, int, *unix.Stat_t, bool) error { return nil }

// Gate is nil: a search walk is kept out of nothing.
func (host) Gate() search.Gate { return nil }

var _ fsbackend.Fence = (*host)(nil)

var _ fs.Service = (*FileSystem)(nil)

// Package fslocal is the bare local backend of fs.Service: it reads and
// writes the host filesystem as the process sees it and never confines a
// mutation. Every mutation runs the shared mechanics of internal/atomicwrite
// through the unconfined host handle of internal/dirfd; fssandbox runs the
// very same code through a handle confined beneath a writable root.
package fslocal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
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
	return cfg, nil
}

// FileSystem is the local backend. It is safe for concurrent use. Its
// per-target mutation lock serializes writes and edits within the process
// only; other processes are not excluded.
type FileSystem struct {
	cfg   Config
	log   *zap.Logger
	host  *dirfd.Dir
	locks lockTable

	// reclaimed holds the [dev, ino] of every directory already scanned for
	// abandoned staging directories.
	reclaimed sync.Map

	// afterStage, when set by tests, runs between staging and publication.
	afterStage func(stagingDir, tempFile string)
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
	return &FileSystem{
		cfg:   cfg,
		log:   log.Named("fslocal"),
		host:  dirfd.Host(),
		locks: lockTable{m: map[fs.TargetKey]*lockEntry{}},
	}, nil
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

var _ fs.Service = (*FileSystem)(nil)

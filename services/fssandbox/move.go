package fssandbox

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Move is the core's move (fs.Manager.Move), but under workspace-write a
// move that would change the way to a path no command may create
// (sandboxpolicy.Reservable: a home workspace's `.config/git`,
// `.config/fish`, `.bashrc`, ...) is refused with fs.CodeSandboxDenied,
// nothing moved (bringsReserved): the attack review's input, a command's
// `x/git/config` holding a core.pager, moved onto a missing `.config`,
// which the host's git then read. What the source holds is looked at as it
// is when the move is asked for.
func (f *FileSystem) Move(ctx context.Context, source, dest fs.Target, opts fs.MoveOptions) (fs.MoveOutcome, error) {
	pol := f.policy.Default()
	if opts.Policy != nil {
		pol = *opts.Policy
	}
	if pol.Mode == sandbox.WorkspaceWrite {
		// The deny-read refusal first, with its own code, as the core
		// gives it (moving ~/.config while ~/.config/gh exists).
		if !f.reads.deny.Empty() {
			for _, t := range []fs.Target{source, dest} {
				if abs := entryPath(t); abs != "" {
					if rule, ok := f.reads.changedDenied(abs); ok {
						return fs.MoveOutcome{}, f.reads.refusal(t, "write", abs, rule)
					}
				}
			}
		}
		if err := f.bringsReserved(source, dest, pol); err != nil {
			return fs.MoveOutcome{}, err
		}
	}
	return f.backend.Move(ctx, source, dest, opts)
}

// bringsReserved refuses a move under pol that would change what lies on
// the way to a reservable path (sandboxpolicy.Reservable): moving away a
// directory that holds one (`.config` while `.config/git` is reserved: a
// command running then, its placeholder moved with it, could make the
// name), moving onto one's directory a symlink (which leads the host
// elsewhere: the second review's `lk -> cfgdir` moved onto `.config`), or
// anything over an existing entry there, or a directory that holds what
// would land on the reservable path itself.
func (f *FileSystem) bringsReserved(source, dest fs.Target, pol sandbox.ExecutionPolicy) error {
	src, dst := entryPath(source), entryPath(dest)
	reserved := sandboxpolicy.Reservable(pol, f.protect, f.policy.DenyRead().Homes())
	holding := func(p string) string {
		for _, r := range reserved {
			if r != p && dirfd.Beneath(p, r) {
				return r
			}
		}
		return ""
	}
	if r := holding(src); r != "" {
		return denied(source, pol.Mode, fmt.Errorf("%s holds %s, a path no command or tool may create: moving it away would free that name", source.DisplayPath, r))
	}
	r := holding(dst)
	if r == "" {
		return nil
	}
	var st unix.Stat_t
	if unix.Lstat(dst, &st) == nil {
		return denied(dest, pol.Mode, fmt.Errorf("%s holds %s, a path no command or tool may create: it is not replaced", dest.DisplayPath, r))
	}
	if unix.Lstat(src, &st) != nil || !dirfd.IsDir(&st) {
		return denied(dest, pol.Mode, fmt.Errorf("%s would hold %s, a path no command or tool may create: only a directory is moved there", dest.DisplayPath, r))
	}
	for _, r := range reserved {
		if r == dst || !dirfd.Beneath(dst, r) {
			continue // the destination itself is the protected-path rule's
		}
		if unix.Lstat(filepath.Join(src, r[len(dst)+1:]), &st) == nil {
			return denied(dest, pol.Mode, fmt.Errorf("the move would make %s, a path no command or tool may create (a host-run file or the workspace's .git), from %s",
				r, filepath.Join(source.DisplayPath, r[len(dst)+1:])))
		}
	}
	return nil
}

// entryPath is the path of the entry target names, a final symlink not
// followed (a move moves a symlink itself): its display path's directory,
// resolved, joined with its name; its key when that cannot be had.
func entryPath(target fs.Target) string {
	dp := filepath.Clean(target.DisplayPath)
	if !filepath.IsAbs(dp) {
		return string(target.Key)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(dp))
	if err != nil {
		return string(target.Key)
	}
	return filepath.Join(dir, filepath.Base(dp))
}

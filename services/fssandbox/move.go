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
// directory moved where what it holds would land on a path no command
// may create (sandboxpolicy.Reservable: a home workspace's
// `.config/git`, `.config/fish`, `.bashrc`, ...) is refused with
// fs.CodeSandboxDenied, nothing moved: the attack review's input, a
// command's `x/git/config` holding a core.pager, moved onto a missing
// `.config`, which the host's git then read. Each such path is looked for
// beneath the source as it is when the move is asked for.
func (f *FileSystem) Move(ctx context.Context, source, dest fs.Target, opts fs.MoveOptions) (fs.MoveOutcome, error) {
	pol := f.policy.Default()
	if opts.Policy != nil {
		pol = *opts.Policy
	}
	if pol.Mode == sandbox.WorkspaceWrite {
		if err := f.bringsReserved(source, dest, pol); err != nil {
			return fs.MoveOutcome{}, err
		}
	}
	return f.backend.Move(ctx, source, dest, opts)
}

// bringsReserved refuses the move of the directory source to dest when an
// entry beneath source would land on a reservable path of pol.
func (f *FileSystem) bringsReserved(source, dest fs.Target, pol sandbox.ExecutionPolicy) error {
	src, dst := string(source.Key), string(dest.Key)
	var st unix.Stat_t
	if unix.Lstat(src, &st) != nil || !dirfd.IsDir(&st) {
		return nil
	}
	for _, r := range sandboxpolicy.Reservable(pol, f.protect, f.policy.DenyRead().Homes()) {
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

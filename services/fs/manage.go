package fs

import (
	"context"

	"github.com/dsh-go/harness/services/sandbox"
)

// Manager creates, moves and removes directory entries. Like Writer's, each
// operation is fenced by the backend when it confines: under workspace-write
// every syscall runs beneath the writable root that contains the entry (both
// entries' parents for Move), a path that leaves it is CodeSandboxDenied and
// nothing changes. A writable root itself is never moved or removed.
// Operations on an entry (Move's source and destination, Remove's target)
// never follow a final symlink: they address the link itself, reached
// through its canonical parent.
type Manager interface {
	// Mkdir creates the directory at target. With opts.Parents missing
	// parents are made too and an existing directory is not an error
	// (Created 0). Errors: the fence's refusal; CodeAlreadyExists (anything
	// at the target without Parents, or a non-directory with it);
	// CodeNotFound (a missing parent without Parents, or a parent that is not
	// a directory); CodePermissionDenied, CodeAborted, CodeIOError.
	Mkdir(ctx context.Context, target Target, opts MkdirOptions) (MkdirOutcome, error)
	// Move renames the entry at source to dest, a file, a symlink or a
	// directory, across directories, atomically when both lie on one
	// filesystem. It never replaces an entry at dest unless opts.Overwrite
	// (renameat2 RENAME_NOREPLACE). Between two filesystems, both admitted,
	// a regular file is copied durably (the atomic write's publication) and
	// the source removed (Copied); anything else is CodeCrossDevice.
	// Errors: the fence's refusal on either side; CodeNotFound (no source,
	// or no destination parent); CodeAlreadyExists; CodeStaleVersion (the
	// source is no longer at opts.Version); CodeNotEmpty (a directory over a
	// non-empty one); CodeNotDirectory (a directory over a file, or into
	// itself); CodeCrossDevice; CodePermissionDenied, CodeAborted,
	// CodeIOError.
	Move(ctx context.Context, source, dest Target, opts MoveOptions) (MoveOutcome, error)
	// Remove deletes the entry at target: a file or a symlink (the link,
	// never what it points to), an empty directory, or with opts.Recursive a
	// directory and everything beneath it, entry by entry through
	// descriptors opened beneath the fence without following any symlink.
	// Errors: the fence's refusal; CodeNotFound; CodeNotEmpty (a non-empty
	// directory without Recursive); CodeStaleVersion (a file no longer at
	// opts.Version); CodePermissionDenied, CodeAborted, CodeIOError (a
	// recursive removal that failed part way reports what it removed in its
	// message).
	Remove(ctx context.Context, target Target, opts RemoveOptions) (RemoveOutcome, error)
}

// MkdirOptions tunes Mkdir. A nil Policy means the deployment default.
type MkdirOptions struct {
	Parents bool
	Policy  *sandbox.ExecutionPolicy
}

// MkdirOutcome says how many directories Mkdir created (0 when it already
// existed and Parents was set).
type MkdirOutcome struct {
	Created int
}

// MoveOptions tunes Move. A non-empty Version guards the move: a regular
// file at source must still be at that version. A nil Policy means the
// deployment default, applied to both sides.
type MoveOptions struct {
	Overwrite bool
	Version   Version
	Policy    *sandbox.ExecutionPolicy
}

// MoveOutcome is a successful move: the Type of what moved, whether an entry
// at the destination was Replaced, whether it was Copied between
// filesystems, the Prior version of the source just before the move and the
// Version of the destination after it (a rename changes the change time).
// Note, when set, is one sentence on the change beyond that: the prior
// state the journal could not keep (issue 25: it cannot be undone).
type MoveOutcome struct {
	Type     FileType
	Replaced bool
	Copied   bool
	Prior    Version
	Version  Version
	Note     string
}

// RemoveOptions tunes Remove. A non-empty Version guards the removal of a
// regular file. A nil Policy means the deployment default.
type RemoveOptions struct {
	Recursive bool
	Version   Version
	Policy    *sandbox.ExecutionPolicy
}

// RemoveOutcome is what Remove deleted: the Type of the target and, for a
// directory, the counts of Files, Directories (the target included) and
// Others (symlinks, FIFOs, sockets, devices) removed. Note is MoveOutcome's.
type RemoveOutcome struct {
	Type        FileType
	Files       int
	Directories int
	Others      int
	Note        string
}

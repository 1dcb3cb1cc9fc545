// Package fs defines the filesystem seam of the harness: the Service
// interface every backend implements (fslocal, fssandbox) and the vocabulary
// that flows through it (targets, versions, write intents, outcomes and the
// structured *Error with its FS_* codes).
//
// A Service reads and searches everywhere and mutates only through
// WriteText, EditText, Mkdir, Move and Remove, which carry the per-call
// sandbox policy. Cancellation travels on the context: a cancelled context
// yields an *Error with CodeAborted.
package fs

import (
	"context"
	"iter"

	"github.com/dsh-go/harness/services/sandbox"
)

// ResolveOptions tunes Resolve and Lstat.
type ResolveOptions struct {
	// Cwd, when non-empty, is the absolute directory a relative path resolves
	// against instead of the backend's configured working directory (L-05).
	Cwd string
}

// Resolver turns model-supplied paths into targets and answers identity
// questions about them without touching file contents.
type Resolver interface {
	// Resolve turns path into a Target (L-05..L-15). DisplayPath is the
	// lexical absolute join of the working directory and path; Key is the
	// canonical path of the file, or of its deepest existing ancestor joined
	// with the missing suffix. Errors: CodeNotFound for a blank path or a path
	// through a non-directory, CodeAborted, CodeIOError.
	Resolve(ctx context.Context, path string, opts ResolveOptions) (Target, error)
	// ProcessPath returns the OS path a process would use for the target: its
	// canonical path (L-16).
	ProcessPath(target Target) string
	// FileURL returns the file:// URL of ProcessPath (L-16).
	FileURL(target Target) string
	// Contains reports whether target is root itself or lies beneath it, by
	// canonical path (L-17).
	Contains(root, target Target) bool
}

// Prober reports metadata without reading contents.
type Prober interface {
	// Stat follows symlinks and returns nil, nil when the target is absent,
	// including when a parent segment is not a directory (A-07, L-18, L-24).
	Stat(ctx context.Context, target Target) (*Info, error)
	// Lstat resolves path like Resolve but does not follow a final symlink;
	// a symlink reports its own type, size and version, not its
	// destination's. It returns nil, nil when absent (A-07, L-21, L-22,
	// L-26).
	Lstat(ctx context.Context, path string, opts ResolveOptions) (*Info, error)
}

// Reader reads file contents. Every open is non-blocking and checked with
// fstat on the descriptor: anything but a regular file fails fast with
// CodeNotRegularFile and never hangs (a FIFO or a device is refused, not
// opened for a blocking read).
type Reader interface {
	// ReadText returns the whole file as UTF-8 text, byte for byte, a leading
	// byte-order mark included (L-27); a file starting with a UTF-16
	// byte-order mark is converted, the mark kept as U+FEFF. Errors:
	// CodeNotFound, CodeNotRegularFile, CodeNotText (a NUL in the first 8192
	// bytes, or invalid UTF-8 or UTF-16), CodePermissionDenied, CodeAborted,
	// CodeIOError.
	ReadText(ctx context.Context, target Target) (string, error)
	// StreamText yields the file's text in chunks that never split a code
	// point; concatenated they equal ReadText (A-04, L-28..L-36). An error is
	// yielded once, as the last pair, with an empty chunk.
	StreamText(ctx context.Context, target Target) iter.Seq2[string, error]
	// ReadBytes returns the raw bytes when the file holds at most maxBytes
	// bytes, else CodeTooLarge; it never buffers more than maxBytes+1 bytes
	// (A-05, L-37..L-41).
	ReadBytes(ctx context.Context, target Target, maxBytes int64) ([]byte, error)
	// ListDir returns the window of the directory's entries, in byte order
	// of their names, with metadata but never contents, and the number of
	// entries in the whole directory (A-06, L-42..L-52); with a Depth above
	// 1, the window of the tree beneath it (issue 16). Its work beyond
	// reading the names is bounded by the window: only the window's entries
	// are kept and stat'ed, and a tree walk stops once the window is full
	// or MaxListTreeNames names were read. One bad entry, or one unreadable
	// subdirectory of a tree, never fails the listing (spec decision 16).
	ListDir(ctx context.Context, target Target, window ListWindow) (Listing, error)
}

// Writer mutates files. Each mutation is atomic and durable, serialized per
// target within the process, and fenced by the backend when it confines.
type Writer interface {
	// WriteText creates or replaces the file with content under the write
	// intent in opts (A-10, L-53..L-88). Over an existing text file, content
	// without a byte-order mark gets the file's back, content without "\r"
	// takes the file's dominant line ending, and the file's encoding is kept
	// (spec difference 10, superseding Z-4); otherwise content is stored
	// exactly as given.
	WriteText(ctx context.Context, target Target, content string, opts WriteOptions) (WriteOutcome, error)
	// EditText replaces a literal in the file's LF-normalized text and writes
	// it back changing no byte outside the replaced spans; replaced lines keep
	// their endings, added ones take the dominant one (L-96..L-118, spec
	// difference 10, superseding L-114).
	EditText(ctx context.Context, target Target, req EditRequest) (EditOutcome, error)
	// SandboxMode reports the backend's default sandbox mode and true when the
	// backend confines mutations; a bare backend returns "", false (A-01, S-01).
	SandboxMode() (sandbox.Mode, bool)
}

// Service is the whole filesystem seam. Consumers that need less ask for one
// of the embedded interfaces.
type Service interface {
	Resolver
	Prober
	Reader
	Writer
	Manager
	Searcher
}

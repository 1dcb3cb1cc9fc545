package fs

import (
	"errors"

	"github.com/dsh-go/harness/services/errcode"

	"github.com/dsh-go/harness/services/sandbox"
)

// Code is one of the machine-readable FS_* error codes: the 13 of spec
// section 0, the three of the entry operations (Manager) and
// CodeInvalidSearch (search.go). It is the one code type, errcode.Code.
type Code = errcode.Code

// The closed set of error codes.
const (
	CodeNotFound         Code = "FS_NOT_FOUND"
	CodeNotDirectory     Code = "FS_NOT_DIRECTORY"
	CodeNotText          Code = "FS_NOT_TEXT"
	CodeNotRegularFile   Code = "FS_NOT_REGULAR_FILE"
	CodeTooLarge         Code = "FS_TOO_LARGE"
	CodePermissionDenied Code = "FS_PERMISSION_DENIED"
	CodeSandboxDenied    Code = "FS_SANDBOX_DENIED"
	// CodeReadDenied: the path is in the deny-read set (issue 24), in
	// any mode, for a file tool or a command; the marker is
	// sandbox.ReadDenialMarker.
	CodeReadDenied    Code = "FS_READ_DENIED"
	CodeIOError       Code = "FS_IO_ERROR"
	CodeStaleVersion  Code = "FS_STALE_VERSION"
	CodeNotObserved   Code = "FS_NOT_OBSERVED"
	CodeAmbiguousEdit Code = "FS_AMBIGUOUS_EDIT"
	CodeEditNotFound  Code = "FS_EDIT_NOT_FOUND"
	CodeAborted       Code = "FS_ABORTED"
	// CodeAlreadyExists: an entry is at a Mkdir or Move destination.
	CodeAlreadyExists Code = "FS_ALREADY_EXISTS"
	// CodeNotEmpty: a directory to remove, or to move over, has entries.
	CodeNotEmpty Code = "FS_NOT_EMPTY"
	// CodeCrossDevice: a move between two filesystems of something that
	// cannot be copied (a directory, a symlink, a special file).
	CodeCrossDevice Code = "FS_CROSS_DEVICE"
	// CodeJournal: the journal could not keep the prior state of a change
	// (a full disk, an I/O error), so the change was refused and nothing
	// was changed (issue 25).
	CodeJournal Code = "FS_JOURNAL_FAILED"
	// CodeJournalFull: the journal is at its cap and keeping this change
	// would drop an earlier change of the same session (journal.CodeFull),
	// so the change was refused and nothing was changed.
	CodeJournalFull Code = "FS_JOURNAL_FULL"
)

// Sentinels for errors.Is: errors.Is(err, fs.ErrNotFound) reports whether err
// is an *Error with CodeNotFound.
var (
	ErrNotFound         = &Error{Code: CodeNotFound}
	ErrNotDirectory     = &Error{Code: CodeNotDirectory}
	ErrNotText          = &Error{Code: CodeNotText}
	ErrNotRegularFile   = &Error{Code: CodeNotRegularFile}
	ErrTooLarge         = &Error{Code: CodeTooLarge}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied}
	ErrSandboxDenied    = &Error{Code: CodeSandboxDenied}
	ErrIOError          = &Error{Code: CodeIOError}
	ErrStaleVersion     = &Error{Code: CodeStaleVersion}
	ErrNotObserved      = &Error{Code: CodeNotObserved}
	ErrAmbiguousEdit    = &Error{Code: CodeAmbiguousEdit}
	ErrEditNotFound     = &Error{Code: CodeEditNotFound}
	ErrAborted          = &Error{Code: CodeAborted}
	ErrAlreadyExists    = &Error{Code: CodeAlreadyExists}
	ErrNotEmpty         = &Error{Code: CodeNotEmpty}
	ErrCrossDevice      = &Error{Code: CodeCrossDevice}
	ErrJournal          = &Error{Code: CodeJournal}
	ErrJournalFull      = &Error{Code: CodeJournalFull}
)

// Error is the structured error of every fs.Service method. Its text is
// Message, the exact model-facing sentence of the spec (for example
// `cannot read "/w/a.txt": not found`).
type Error struct {
	// Code is one of the codes.
	Code Code
	// Op is the operation that failed: "resolve", "stat", "lstat", "read",
	// "list", "write", "edit", "mkdir", "move", "delete", "glob" or "grep".
	Op string
	// Path is the display path of the target, empty when there is none.
	Path string
	// Mode is the effective sandbox mode of a CodeSandboxDenied or
	// CodeReadDenied error.
	Mode sandbox.Mode
	// Message is the human-readable sentence; empty only for the sentinels.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns Message, or the code for a sentinel.
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is a sentinel (an *Error without a message)
// carrying the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Code == e.Code
}

// ReadDenial is the cause (Error.Err) of a CodeReadDenied error: the real
// path the opened descriptor named, and the deny-read rule that refuses it
// ("~/.ssh (default)", or for a path reached by another name, the rule of
// the denied path it is: "~/.ssh (default), the same directory as
// /home/u/.ssh").
type ReadDenial struct {
	Path string
	Rule string
}

// Error returns "<path> is in the deny-read set (<rule>)".
func (d *ReadDenial) Error() string { return d.Path + " is in the deny-read set (" + d.Rule + ")" }

// CodeOf returns the code of the first *Error in err's chain, or "" when
// there is none.
func CodeOf(err error) Code {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ""
}

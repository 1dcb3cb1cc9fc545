package undo

import (
	"fmt"

	"github.com/dsh-go/harness/services/errcode"
)

// The codes of an undo that was refused or failed, besides the store's
// CodeNotFound (no change has the ID, or the session has none) and
// CodeDropped (the prior content was evicted by the cap). A refusal
// changes nothing on disk.
const (
	// CodeChangedSince: a path of the change is no longer in the state
	// the change left (its content, mode, owner, type or identity
	// changed, or it appeared or vanished); --force restores anyway.
	CodeChangedSince errcode.Code = "JOURNAL_CHANGED_SINCE"
	// CodeUnsafePath: a directory on the way to a path is now a symlink
	// (or a magic link): the recorded paths are canonical, so it was
	// planted after the change, and undo never writes through it, even
	// with --force.
	CodeUnsafePath errcode.Code = "JOURNAL_UNSAFE_PATH"
	// CodeNotKept: the prior content was not kept (larger than the cap):
	// the change cannot be undone.
	CodeNotKept errcode.Code = "JOURNAL_NOT_KEPT"
	// CodeAlreadyUndone: the change has been undone already (undo the
	// undo to bring it back).
	CodeAlreadyUndone errcode.Code = "JOURNAL_ALREADY_UNDONE"
	// CodeNothingToUndo: the change did not publish (failed, or pending
	// and the disk is in its prior state).
	CodeNothingToUndo errcode.Code = "JOURNAL_NOTHING_TO_UNDO"
	// CodeRestoreFailed: restoring failed part-way (an I/O or permission
	// error after the checks passed); Err says which step.
	CodeRestoreFailed errcode.Code = "JOURNAL_RESTORE_FAILED"
)

// Error is a refused or failed undo: Code (one of the codes above),
// Entry the ID of the change, Path the canonical path concerned ("" when
// none), Reason the sentence saying what is wrong, Err the cause if any.
type Error struct {
	Code   errcode.Code
	Entry  string
	Path   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": "
	if e.Entry != "" {
		msg += "change " + e.Entry + ": "
	}
	if e.Path != "" {
		msg += e.Path + ": "
	}
	msg += e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// refusal returns an *Error for entry id.
func refusal(code errcode.Code, id, path, format string, args ...any) *Error {
	return &Error{Code: code, Entry: id, Path: path, Reason: fmt.Sprintf(format, args...)}
}

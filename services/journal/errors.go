package journal

import (
	"fmt"

	"github.com/dsh-go/harness/services/errcode"
)

// The codes of a journal's errors.
const (
	// CodeNotFound: no entry has the id asked for, or no blob the hash.
	CodeNotFound errcode.Code = "JOURNAL_NOT_FOUND"
	// CodeDropped: the entry or content asked for was dropped to keep the
	// journal within its cap (Options.MaxBytes).
	CodeDropped errcode.Code = "JOURNAL_DROPPED"
	// CodeFailed: the journal could not record a change (a full disk, an
	// I/O error, a segment another process dropped meanwhile): the change
	// must not happen.
	CodeFailed errcode.Code = "JOURNAL_FAILED"
	// CodeFull: the journal is at its cap and making room would drop an
	// earlier change of the session making the change (Prepare): the
	// change must not happen.
	CodeFull errcode.Code = "JOURNAL_FULL"
	// CodeCorrupt: stored content does not match its checksum.
	CodeCorrupt errcode.Code = "JOURNAL_CORRUPT"
)

// Error is every error the journal returns: a code, the operation ("open",
// "record", "read", ...), a message, and the cause (nil when none).
type Error struct {
	Code errcode.Code
	Op   string
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("journal %s: %s: %v", e.Op, e.Msg, e.Err)
	}
	return fmt.Sprintf("journal %s: %s", e.Op, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

func newErr(code errcode.Code, op string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Msg: fmt.Sprintf(format, args...), Err: cause}
}

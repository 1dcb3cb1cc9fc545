package journal

import (
	"errors"

	"github.com/dsh-go/harness/services/errcode"
)

// Until the store lands (journal-store): its codes and error type.
const (
	CodeNotFound errcode.Code = "JOURNAL_NOT_FOUND"
	CodeDropped  errcode.Code = "JOURNAL_DROPPED"
)

type Error struct {
	Code errcode.Code
	Op   string
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }

func codeOf(err error) errcode.Code {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ""
}

package principal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/errcode"
)

// The codes of Load's errors.
const (
	// CodeInvalid: the file cannot be read, is not YAML, or a value in it
	// is refused (an unknown key, a bad workspace, mode or name).
	CodeInvalid errcode.Code = "PRINCIPALS_INVALID"
	// CodeUnsafe: the file is writable by its group or by others, who
	// could then grant themselves workspaces and modes.
	CodeUnsafe errcode.Code = "PRINCIPALS_UNSAFE"
)

// Error is every error of Load: the code, the file, the line (0 when the
// error is about the whole file), the principal and the key concerned
// ("" when none), what is wrong, and the cause (nil when none).
type Error struct {
	Code      errcode.Code
	File      string
	Line      int
	Principal string
	Key       string
	Msg       string
	Err       error
}

// Error returns `--principals FILE:LINE: principal "P": key "K": MSG`,
// leaving out the parts that are empty, then ": " and the cause.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("--principals " + e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Principal != "" {
		b.WriteString(": principal " + strconv.Quote(e.Principal))
	}
	if e.Key != "" {
		b.WriteString(": key " + strconv.Quote(e.Key))
	}
	b.WriteString(": " + e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// where is the place in the file an error is about.
type where struct {
	file, principal, key string
	line                 int
}

// fail returns the CodeInvalid error at w.
func (w where) fail(format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, File: w.file, Line: w.line, Principal: w.principal, Key: w.key, Msg: fmt.Sprintf(format, args...)}
}

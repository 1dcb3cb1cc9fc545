package fsbackend

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/fs"
)

// newErr builds the structured error of a failed operation.
func newErr(code fs.Code, op, dp string, cause error, format string, args ...any) *fs.Error {
	return &fs.Error{Code: code, Op: op, Path: dp, Message: fmt.Sprintf(format, args...), Err: cause}
}

// aborted is the error of a cancelled context: "<op> aborted" (L-07, L-31).
func aborted(op string, cause error) *fs.Error {
	if cause == nil {
		cause = context.Canceled
	}
	return &fs.Error{Code: fs.CodeAborted, Op: op, Message: op + " aborted", Err: cause}
}

// checkCtx returns the abort error of op when ctx has ended.
func checkCtx(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return aborted(op, err)
	}
	return nil
}

// osErr maps an OS error of operation op on display path dp to a structured
// error with the spec's wording: `cannot <verb> "<dp>": <reason>`.
func osErr(op, verb, dp string, err error) *fs.Error {
	if fe, ok := errors.AsType[*fs.Error](err); ok {
		return fe
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return aborted(op, err)
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return newErr(fs.CodeIOError, op, dp, err, "cannot %s %q: %v", verb, dp, err)
	}
	switch errno {
	case unix.ENOENT:
		return newErr(fs.CodeNotFound, op, dp, err, "cannot %s %q: not found", verb, dp)
	case unix.ENOTDIR:
		return newErr(fs.CodeNotFound, op, dp, err, "cannot %s %q: a parent path segment is not a directory", verb, dp)
	case unix.EACCES, unix.EPERM:
		return newErr(fs.CodePermissionDenied, op, dp, err, "cannot %s %q: permission denied", verb, dp)
	case unix.EISDIR:
		return newErr(fs.CodeNotRegularFile, op, dp, err, "cannot %s %q: not a regular file", verb, dp)
	default:
		return newErr(fs.CodeIOError, op, dp, err, "cannot %s %q: %s", verb, dp, errno.Error())
	}
}

func notRegular(op, verb, dp string) *fs.Error {
	return newErr(fs.CodeNotRegularFile, op, dp, nil, "cannot %s %q: not a regular file", verb, dp)
}

func isAbsent(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

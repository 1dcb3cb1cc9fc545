package httpauth

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/dsh-go/harness/services/errcode"
)

// The codes of this package's errors.
const (
	// CodeInvalidToken: a presented token was refused (unknown, expired,
	// wrong issuer or audience, bad signature, ...). The error unwraps to
	// auth.ErrInvalidToken.
	CodeInvalidToken errcode.Code = "AUTH_INVALID_TOKEN"
	// CodeTokenFileInvalid: the token file could not be read or a line of it
	// is malformed.
	CodeTokenFileInvalid errcode.Code = "AUTH_TOKEN_FILE_INVALID"
	// CodeTokenFileUnsafe: the token file may be changed by someone other
	// than its owner (writable by group or others, or owned by another
	// user), or is not a regular file.
	CodeTokenFileUnsafe errcode.Code = "AUTH_TOKEN_FILE_UNSAFE"
	// CodeConfigInvalid: a JWT verifier's options are unusable.
	CodeConfigInvalid errcode.Code = "AUTH_CONFIG_INVALID"
)

// Error is every error this package returns: a code, a short message that
// never contains a token or a token hash, and the cause (nil when none).
type Error struct {
	Code errcode.Code
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	// A refused token's message already begins "invalid token".
	if e.Err != nil && e.Err != auth.ErrInvalidToken { //nolint:errorlint // identity: the bare sentinel, not a wrapped cause

		return fmt.Sprintf("%s: %v", e.Msg, e.Err)
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

func newErr(code errcode.Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// invalidToken is the error of a refused token: reason is short and fixed
// ("expired", "wrong issuer"), never text taken from the token.
func invalidToken(reason string) *Error {
	return &Error{Code: CodeInvalidToken, Msg: "invalid token: " + reason, Err: auth.ErrInvalidToken}
}

package textfile

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// BinarySampleBytes is the number of leading raw bytes in which a NUL byte
// (0x00) marks a file as binary. Readers pass it as the nulScope of Validate,
// and Decoder applies it to the first bytes of a stream.
const BinarySampleBytes = 8192

// ErrBinary is returned when a NUL byte occurs in the inspected leading part
// of the data, which is then treated as a binary file rather than text.
var ErrBinary = errors.New("binary file")

// ErrInvalidUTF8 is returned when data is not valid UTF-8, including when it
// ends in the middle of a multi-byte sequence.
var ErrInvalidUTF8 = errors.New("invalid UTF-8 text")

// Validate reports whether b is acceptable text. It returns ErrBinary if a NUL
// byte occurs within the first nulScope bytes of b (a negative nulScope means
// all of b; a nulScope beyond len(b) is clamped), otherwise ErrInvalidUTF8 if
// b is not valid UTF-8 (an incomplete trailing sequence is invalid), and nil
// otherwise. A NUL after nulScope is a valid code point and is accepted. The
// NUL check takes precedence over the UTF-8 check.
func Validate(b []byte, nulScope int) error {
	scope := b
	if nulScope >= 0 && nulScope < len(b) {
		scope = b[:nulScope]
	}
	if bytes.IndexByte(scope, 0) >= 0 {
		return ErrBinary
	}
	if !utf8.Valid(b) {
		return ErrInvalidUTF8
	}
	return nil
}

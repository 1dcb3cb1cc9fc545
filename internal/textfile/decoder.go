package textfile

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Decoder validates a stream of raw bytes as UTF-8 text chunk by chunk,
// applying the same rules as Validate(stream, BinarySampleBytes): a NUL byte
// in the first BinarySampleBytes bytes of the stream gives ErrBinary, and any
// invalid UTF-8 gives ErrInvalidUTF8, with ErrBinary taking precedence.
// Multi-byte code points may be split across chunks at any offset. For a
// valid stream the concatenation of all Feed results equals the string
// conversion of the whole stream, whatever the chunking.
//
// The zero value is ready to use. A Decoder is not safe for concurrent use.
type Decoder struct {
	seen    int               // bytes fed so far, capped at BinarySampleBytes
	carry   [utf8.UTFMax]byte // incomplete trailing sequence from the last chunk
	ncarry  int               // number of bytes used in carry, at most 3 between calls
	pending bool              // invalid UTF-8 seen while the NUL sample was incomplete
	err     error             // sticky error
}

// Feed consumes the next chunk of the stream and returns the text it
// completes: the longest prefix of the carried bytes plus chunk that ends on
// a complete code point. Up to 3 bytes of an incomplete trailing sequence are
// carried over to the next call (or reported by Close).
//
// Feed returns ErrBinary if a NUL byte falls within the first
// BinarySampleBytes bytes of the stream, counted across calls, and
// ErrInvalidUTF8 for any invalid sequence. So that a NUL in that sample
// always wins, as in Validate, an invalid sequence found before the first
// BinarySampleBytes bytes have all been fed is reported by the call that
// completes them, or by Close; until then Feed returns "" and a nil error.
// Once a stream is known to be invalid Feed returns no more text, and after
// an error every later call returns the same error.
func (d *Decoder) Feed(chunk []byte) (string, error) {
	if d.err != nil {
		return "", d.err
	}
	if d.seen < BinarySampleBytes {
		scope := chunk
		if rem := BinarySampleBytes - d.seen; len(scope) > rem {
			scope = scope[:rem]
		}
		if bytes.IndexByte(scope, 0) >= 0 {
			d.err = ErrBinary
			return "", d.err
		}
		d.seen += len(scope)
	}
	if !d.pending {
		text, ok := d.decode(chunk)
		if ok {
			return text, nil
		}
		d.pending = true
	}
	if d.seen >= BinarySampleBytes {
		d.err = ErrInvalidUTF8
		return "", d.err
	}
	return "", nil
}

// Close ends the stream. It returns ErrInvalidUTF8 if an incomplete trailing
// sequence remains or an invalid sequence is still unreported, the sticky
// error if an earlier call failed, and nil otherwise.
func (d *Decoder) Close() error {
	if d.err == nil && (d.pending || d.ncarry > 0) {
		d.err = ErrInvalidUTF8
	}
	return d.err
}

// decode joins the carried bytes with chunk and returns the text up to the
// last complete code point, carrying the incomplete tail. It reports false if
// the bytes contain an invalid sequence.
func (d *Decoder) decode(chunk []byte) (string, bool) {
	var headBuf [utf8.UTFMax]byte
	var head []byte
	if d.ncarry > 0 {
		// Complete the carried code point with the first bytes of chunk.
		for !utf8.FullRune(d.carry[:d.ncarry]) {
			if len(chunk) == 0 {
				return "", true // still incomplete; keep carrying
			}
			d.carry[d.ncarry] = chunk[0]
			d.ncarry++
			chunk = chunk[1:]
		}
		r, size := utf8.DecodeRune(d.carry[:d.ncarry])
		if (r == utf8.RuneError && size == 1) || size != d.ncarry {
			return "", false
		}
		head = headBuf[:copy(headBuf[:], d.carry[:d.ncarry])]
		d.ncarry = 0
	}

	cut := incompleteTailStart(chunk)
	body := chunk[:cut]
	if !utf8.Valid(body) {
		return "", false
	}
	d.ncarry = copy(d.carry[:], chunk[cut:])

	if len(head) == 0 {
		return string(body), true
	}
	var b strings.Builder
	b.Grow(len(head) + len(body))
	b.Write(head)
	b.Write(body)
	return b.String(), true
}

// incompleteTailStart returns the index at which b ends in a truncated but
// so far valid multi-byte sequence, or len(b) if it does not.
func incompleteTailStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

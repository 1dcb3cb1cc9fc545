package textfile

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Decoder decodes a stream of raw bytes as text chunk by chunk, applying the
// same rules as Decode(stream, BinarySampleBytes). The first two bytes
// choose the encoding (see Sniff). For UTF-8, a NUL byte in the first
// BinarySampleBytes bytes of the stream gives ErrBinary, and any invalid
// UTF-8 gives ErrInvalidUTF8, with ErrBinary taking precedence. For UTF-16,
// the text is converted to UTF-8 (the byte-order mark kept as U+FEFF); a
// U+0000 in the first BinarySampleBytes bytes of that text gives ErrBinary
// and an odd length or unpaired surrogate ErrInvalidUTF16. Multi-byte code
// points may be split across chunks at any offset. For a valid stream the
// concatenation of all Feed results equals Decode's text, whatever the
// chunking.
//
// The zero value is ready to use. A Decoder is not safe for concurrent use.
type Decoder struct {
	head    [2]byte           // first bytes, held until the encoding is known
	nhead   int               // number of bytes used in head
	sniffed bool              // the encoding is known
	u16     *utf16Stream      // non-nil for a UTF-16 stream
	seen    int               // bytes fed (UTF-8) or decoded (UTF-16), capped at BinarySampleBytes
	carry   [utf8.UTFMax]byte // incomplete trailing sequence from the last chunk
	ncarry  int               // number of bytes used in carry, at most 3 between calls
	pending bool              // invalid UTF-8 seen while the NUL sample was incomplete
	err     error             // sticky error
}

// Encoding returns the stream's encoding, UTF8 until two bytes were fed.
func (d *Decoder) Encoding() Encoding {
	if d.u16 != nil {
		return d.u16.enc
	}
	return UTF8
}

// Feed consumes the next chunk of the stream and returns the text it
// completes: the longest prefix of the carried bytes plus chunk that ends on
// a complete code point. Up to 3 bytes of an incomplete trailing sequence are
// carried over to the next call (or reported by Close); a first byte FF or
// FE is held until the second byte tells whether it starts a UTF-16 mark.
//
// For UTF-8, Feed returns ErrBinary if a NUL byte falls within the first
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
	if !d.sniffed && d.nhead == 0 && len(chunk) > 0 && chunk[0] != 0xFF && chunk[0] != 0xFE {
		d.sniffed = true // no byte-order mark of UTF-16 can follow
	}
	if !d.sniffed {
		n := copy(d.head[d.nhead:], chunk)
		d.nhead += n
		chunk = chunk[n:]
		if d.nhead < len(d.head) {
			return "", nil
		}
		d.sniffed = true
		if enc := Sniff(d.head[:]); enc != UTF8 {
			d.u16 = &utf16Stream{enc: enc, carry: d.head[:]}
		} else {
			first, err := d.feedUTF8(d.head[:])
			if err != nil {
				return "", err
			}
			rest, err := d.feedUTF8(chunk)
			return first + rest, err
		}
	}
	if d.u16 != nil {
		return d.feedUTF16(chunk, false)
	}
	return d.feedUTF8(chunk)
}

// feedUTF16 converts chunk and checks the converted text for U+0000 within
// the sample before reporting an invalid unit.
func (d *Decoder) feedUTF16(chunk []byte, atEOF bool) (string, error) {
	text, err := d.u16.feed(chunk, atEOF)
	if d.seen < BinarySampleBytes {
		scope := text[:min(len(text), BinarySampleBytes-d.seen)]
		if strings.IndexByte(scope, 0) >= 0 {
			d.err = ErrBinary
			return "", d.err
		}
		d.seen += len(scope)
	}
	if err != nil {
		d.err = err
		return "", err
	}
	return text, nil
}

func (d *Decoder) feedUTF8(chunk []byte) (string, error) {
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

// Close ends the stream. It returns ErrInvalidUTF8 or ErrInvalidUTF16 if an
// incomplete trailing sequence remains or an invalid sequence is still
// unreported, the sticky error if an earlier call failed, and nil otherwise.
// No text is ever held back at Close: a held first byte is FF or FE, which
// alone is invalid.
func (d *Decoder) Close() error {
	if d.err != nil {
		return d.err
	}
	if !d.sniffed {
		d.sniffed = true
		if _, err := d.feedUTF8(d.head[:d.nhead]); err != nil {
			return err
		}
	}
	if d.u16 != nil {
		_, err := d.feedUTF16(nil, true)
		return err
	}
	if d.pending || d.ncarry > 0 {
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

package textfile

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Encoding is how a text file stores its code points. Only a byte-order mark
// marks a file as UTF-16; everything else is read as UTF-8.
type Encoding uint8

const (
	// UTF8 is the default encoding, with or without a byte-order mark.
	UTF8 Encoding = iota
	// UTF16LE is little-endian UTF-16 starting with the mark FF FE.
	UTF16LE
	// UTF16BE is big-endian UTF-16 starting with the mark FE FF.
	UTF16BE
)

// String returns "UTF-8", "UTF-16LE" or "UTF-16BE", or "Encoding(N)".
func (e Encoding) String() string {
	switch e {
	case UTF8:
		return "UTF-8"
	case UTF16LE:
		return "UTF-16LE"
	case UTF16BE:
		return "UTF-16BE"
	default:
		return "Encoding(" + strconv.Itoa(int(e)) + ")"
	}
}

// ErrInvalidUTF16 is returned when data marked as UTF-16 by its byte-order
// mark holds an odd number of bytes or an unpaired surrogate.
var ErrInvalidUTF16 = errors.New("invalid UTF-16 text")

// Sniff returns the encoding that the byte-order mark at the start of b
// announces: UTF16LE for FF FE, UTF16BE for FE FF, UTF8 otherwise.
func Sniff(b []byte) Encoding {
	switch {
	case len(b) >= 2 && b[0] == 0xFF && b[1] == 0xFE:
		return UTF16LE
	case len(b) >= 2 && b[0] == 0xFE && b[1] == 0xFF:
		return UTF16BE
	default:
		return UTF8
	}
}

// Decode returns the text of a file's raw bytes and its encoding. UTF-8 text
// is returned byte for byte; UTF-16 text is converted to UTF-8, its
// byte-order mark kept as a leading U+FEFF so that SplitBOM sees it.
//
// The errors are those of Validate for UTF-8. For UTF-16, ErrBinary if a
// U+0000 falls within the first nulScope bytes of the converted text (a
// negative nulScope means all of it), otherwise ErrInvalidUTF16 for an odd
// length or an unpaired surrogate; only the text before the first invalid
// unit is searched for U+0000.
func Decode(b []byte, nulScope int) (string, Encoding, error) {
	enc := Sniff(b)
	if enc == UTF8 {
		if err := Validate(b, nulScope); err != nil {
			return "", enc, err
		}
		return string(b), enc, nil
	}
	text, n, err := decodeUTF16(enc, b, true)
	if err == nil && n != len(b) {
		err = ErrInvalidUTF16
	}
	scope := text
	if nulScope >= 0 && nulScope < len(scope) {
		scope = scope[:nulScope]
	}
	if bytes.IndexByte(scope, 0) >= 0 {
		return "", enc, ErrBinary
	}
	if err != nil {
		return "", enc, err
	}
	return string(text), enc, nil
}

// Encode returns text stored in enc: text itself for UTF8, else the UTF-16
// code units of its code points (a leading U+FEFF becomes the byte-order
// mark). It returns ErrInvalidUTF8 if text is not valid UTF-8 and enc is
// UTF-16, since such text has no UTF-16 form.
func Encode(text string, enc Encoding) ([]byte, error) {
	codec := utf16Codec(enc)
	if codec == nil {
		return []byte(text), nil
	}
	if !utf8.ValidString(text) {
		return nil, ErrInvalidUTF8
	}
	b, _, err := transform.Bytes(codec.NewEncoder(), []byte(text))
	return b, err
}

// utf16Codec returns the x/text codec of enc, keeping any byte-order mark as
// U+FEFF in both directions, or nil for UTF8.
func utf16Codec(enc Encoding) encoding.Encoding {
	switch enc {
	case UTF16LE:
		return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	case UTF16BE:
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	default:
		return nil
	}
}

// decodeUTF16 converts the longest valid prefix of src to UTF-8. It returns
// the text and the number of bytes of src it covers. Unless atEOF, a
// trailing odd byte or high surrogate is left unconsumed without error, for
// the next call to complete. Any invalid unit ends the text with
// ErrInvalidUTF16: the x/text decoder replaces such units with U+FFFD, so
// each decoded piece is encoded again and compared with its source.
func decodeUTF16(enc Encoding, src []byte, atEOF bool) ([]byte, int, error) {
	codec := utf16Codec(enc)
	dec, en := codec.NewDecoder(), codec.NewEncoder()
	// Two bytes of UTF-16 become at most three of UTF-8.
	dst := make([]byte, len(src)/2*3+utf8.UTFMax)
	nDst, nSrc, err := dec.Transform(dst, src, atEOF)
	if err != nil && !errors.Is(err, transform.ErrShortSrc) {
		return nil, 0, ErrInvalidUTF16
	}
	text := dst[:nDst]
	if !bytes.Contains(text, []byte(string(utf8.RuneError))) {
		return text, nSrc, nil
	}
	// Find the first replacement that did not come from a real U+FFFD.
	var back [4]byte
	in := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		nb, _, _ := en.Transform(back[:], text[i:i+size], true)
		if r == utf8.RuneError && !bytes.HasPrefix(src[in:], back[:nb]) {
			return text[:i], in, ErrInvalidUTF16
		}
		i += size
		in += nb
	}
	return text, nSrc, nil
}

// utf16Stream is the UTF-16 side of Decoder: it carries up to three bytes
// (an odd byte, a high surrogate, or both) between chunks.
type utf16Stream struct {
	enc   Encoding
	carry []byte
}

// feed converts the carried bytes and chunk, carrying any incomplete tail.
func (u *utf16Stream) feed(chunk []byte, atEOF bool) (string, error) {
	src := chunk
	if len(u.carry) > 0 {
		src = append(append(make([]byte, 0, len(u.carry)+len(chunk)), u.carry...), chunk...)
	}
	text, n, err := decodeUTF16(u.enc, src, atEOF)
	u.carry = append(u.carry[:0:0], src[n:]...)
	if err == nil && atEOF && len(u.carry) > 0 {
		err = ErrInvalidUTF16
	}
	return string(text), err
}

package cli

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// term returns s, an untrusted string (a path, a session ID, a client
// name, a code, a command line, an error's message), as one terminal cell
// or line shows it: each control character (C0, DEL, C1), Unicode format
// character (Cf: the bidi controls U+200E/F, U+202A–202E, U+2066–2069, the
// zero-width ones, U+FEFF), line or paragraph separator (U+2028/9) and
// byte that is not UTF-8 becomes its Go escape, as strconv.Quote writes it
// (`\x1b`, `\n`, `\u202e`, `\xff`). Everything else is kept as it is, so
// the text reads as typed and nothing it holds can move the cursor,
// recolour the screen, start a line or reorder what follows.
func term(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r is escaped by term; utf8.RuneError stands
// for a byte that is not UTF-8 (the replacement character itself is kept).
func unsafeRune(r rune) bool {
	return r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// termError is an error whose message is shown through term; it wraps the
// error it shows, so its code and type are still found by errors.As.
type termError struct{ err error }

func (e termError) Error() string { return term(e.err.Error()) }
func (e termError) Unwrap() error { return e.err }

// termErr returns err with its message shown through term; nil for nil.
func termErr(err error) error {
	if err == nil {
		return nil
	}
	return termError{err}
}

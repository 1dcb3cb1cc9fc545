package textfile

import (
	"strconv"
	"strings"
)

// BOM is the UTF-8 encoding of the byte order mark U+FEFF (bytes EF BB BF).
const BOM = "\uFEFF"

// SplitBOM strips exactly one leading UTF-8 byte order mark from s. It
// reports whether s started with one and returns the remainder; when s has
// no BOM, rest is s itself.
func SplitBOM(s string) (hasBOM bool, rest string) {
	if strings.HasPrefix(s, BOM) {
		return true, s[len(BOM):]
	}
	return false, s
}

// Style is a file's line-ending convention.
type Style uint8

const (
	// LF ends lines with "\n". It is the default style.
	LF Style = iota
	// CRLF ends lines with "\r\n".
	CRLF
)

// String returns "LF" or "CRLF", or "Style(N)" for an unknown value N.
func (s Style) String() string {
	switch s {
	case LF:
		return "LF"
	case CRLF:
		return "CRLF"
	default:
		return "Style(" + strconv.Itoa(int(s)) + ")"
	}
}

// Endings counts the line endings of a text fed in pieces of any size. The
// zero value is an empty count.
type Endings struct {
	CRLF   int  // "\r\n" pairs; a run of "\r" before "\n" counts once
	LF     int  // lone "\n"
	lastCR bool // the last piece ended in "\r"
}

// Add counts the line endings of the next piece of text.
func (e *Endings) Add(s string) {
	if s == "" {
		return
	}
	lf := strings.Count(s, "\n")
	crlf := strings.Count(s, "\r\n")
	if e.lastCR && s[0] == '\n' {
		crlf++
	}
	e.CRLF += crlf
	e.LF += lf - crlf
	e.lastCR = s[len(s)-1] == '\r'
}

// Style returns the dominant style counted so far: CRLF only when there
// are strictly more "\r\n" pairs than lone "\n" (an "\n" not preceded by
// "\r"); ties, including text without any newline, give LF. A lone "\r" is
// ignored, and a run of "\r" before "\n" counts as one "\r\n" pair,
// matching NormalizeLF.
func (e Endings) Style() Style {
	if e.CRLF > e.LF {
		return CRLF
	}
	return LF
}

// NormalizeLF converts s to LF line endings: every "\r\n" becomes "\n". A
// run of "\r" immediately before "\n" (as in "\r\r\n") is treated as part of
// that line ending and also becomes a single "\n", so the result never
// contains "\r\n" and NormalizeLF is idempotent. A lone "\r" not followed by
// "\n" is left untouched. When s contains no "\r\n", s itself is returned
// without allocating.
func NormalizeLF(s string) string {
	i := strings.Index(s, "\r\n")
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) - 1)
	for i >= 0 {
		j := i
		for j > 0 && s[j-1] == '\r' {
			j--
		}
		b.WriteString(s[:j])
		b.WriteByte('\n')
		s = s[i+2:]
		i = strings.Index(s, "\r\n")
	}
	b.WriteString(s)
	return b.String()
}

// Restore converts LF-normalized text back to the line-ending style st. For
// LF it returns normalized unchanged; for CRLF every "\n" becomes "\r\n".
// Restore expects the output of NormalizeLF (text without any "\r\n"); for
// such input the CRLF result never contains "\r\r\n" and
// NormalizeLF(Restore(normalized, st)) == normalized. An unknown style is
// treated as LF.
func Restore(normalized string, st Style) string {
	if st != CRLF {
		return normalized
	}
	return strings.ReplaceAll(normalized, "\n", "\r\n")
}

package textfile

import (
	"errors"
	"sort"
	"strconv"
	"strings"
)

// ErrEmptyOld is returned by ApplyEdit when the string to replace is empty.
var ErrEmptyOld = errors.New("old_string must be a non-empty string")

// ErrNotFound is what a *NotFoundError matches with errors.Is.
var ErrNotFound = errors.New("old_string was not found")

// AmbiguousError is returned by ApplyEdit when the string to replace occurs
// more than once and replacing all occurrences was not requested. Count is
// the number of non-overlapping occurrences.
type AmbiguousError struct {
	Count int
}

// Error returns "old_string matched <Count> times".
func (e *AmbiguousError) Error() string {
	return "old_string matched " + strconv.Itoa(e.Count) + " times"
}

// Edit is the result of a successful ApplyEdit.
type Edit struct {
	// Before is the file's text before the edit, LF-normalized and without
	// the BOM, for diffs.
	Before string
	// After is the file's text after the edit, LF-normalized and without the
	// BOM, for diffs. It is exactly what a later read of Output shows:
	// NormalizeLF of Output with one leading BOM removed.
	After string
	// Output is the exact text to write back to disk: the file's bytes
	// outside the replaced spans unchanged, BOM included.
	Output string
	// Replacements is the number of occurrences replaced (at least 1).
	Replacements int
	// Style is the file's dominant line-ending style over the whole file,
	// the ending of lines the edit adds.
	Style Style
	// HasBOM reports whether the file started with a UTF-8 BOM, which
	// Output keeps.
	HasBOM bool
	// Note names a change of the file's bytes beyond its text ("Byte-order
	// mark added." when new text puts U+FEFF at the start), or "".
	Note string
}

// ApplyEdit replaces oldString with newString in raw, the file's already
// decoded text, and changes nothing else: every byte outside the replaced
// spans, the BOM and untouched line endings included, is kept (spec
// difference 10, superseding L-114). Within a replaced span, the n-th line
// break of newString takes the ending of the n-th line break of the span it
// replaces; breaks beyond those take the file's dominant ending (Style).
//
// Matching happens on LF-normalized text without the BOM: raw, oldString and
// newString are all passed through NormalizeLF, so an agent may give either
// line ending. Occurrences are counted non-overlapping, left to right. If
// replaceAll is false exactly one occurrence must exist; otherwise every
// occurrence is replaced.
//
// The errors are ErrEmptyOld if oldString is empty, a *NotFoundError (which
// matches ErrNotFound, with a hint when a near match exists) if it does not
// occur, and *AmbiguousError if it occurs more than once while replaceAll is
// false. On error the returned Edit is the zero value.
//
// A replacement can put a "\r" next to a "\n" at a splice boundary (for
// example when newString ends in a lone "\r" before a line break). Such a
// pair reads back as a line ending, so After is derived from Output and is
// therefore always what a subsequent read shows.
func ApplyEdit(raw, oldString, newString string, replaceAll bool) (Edit, error) {
	if oldString == "" {
		return Edit{}, ErrEmptyOld
	}
	hasBOM, rest := SplitBOM(raw)
	m := mapLines(rest)
	before := m.norm
	oldNorm := NormalizeLF(oldString)
	newNorm := NormalizeLF(newString)

	n := strings.Count(before, oldNorm)
	switch {
	case n == 0:
		return Edit{}, notFound(before, oldNorm)
	case n > 1 && !replaceAll:
		return Edit{}, &AmbiguousError{Count: n}
	}

	style := m.style()
	dominant := "\n"
	if style == CRLF {
		dominant = "\r\n"
	}
	var b strings.Builder
	// Each replaced span is at least len(oldNorm) bytes of raw; each "\n"
	// of newNorm may become "\r\n".
	b.Grow(len(raw) - n*len(oldNorm) + n*2*len(newNorm))
	if hasBOM {
		b.WriteString(BOM)
	}
	rawPos, normPos := 0, 0
	for range n {
		start := normPos + strings.Index(before[normPos:], oldNorm)
		end := start + len(oldNorm)
		b.WriteString(rest[rawPos:m.raw(start)])
		m.writeReplacement(&b, newNorm, start, end, dominant)
		rawPos, normPos = m.raw(end), end
	}
	b.WriteString(rest[rawPos:])

	output := b.String()
	addedBOM, body := SplitBOM(output)
	e := Edit{
		Before:       before,
		After:        NormalizeLF(body),
		Output:       output,
		Replacements: n,
		Style:        style,
		HasBOM:       hasBOM,
	}
	if addedBOM && !hasBOM {
		e.Note = changeNote(false, true, Endings{}, Endings{})
	}
	return e, nil
}

// lineMap is a text's LF-normalized form with what normalization removed:
// crAt[i] is the normalized index of an "\n" that stood after a run of
// "\r", and crSum[i] the number of "\r" removed up to and including that
// run. It maps normalized offsets back to the original text.
type lineMap struct {
	orig  string
	norm  string
	crAt  []int
	crSum []int
}

// mapLines normalizes s exactly as NormalizeLF does, recording each
// removed "\r" run.
func mapLines(s string) lineMap {
	m := lineMap{orig: s}
	i := strings.Index(s, "\r\n")
	if i < 0 {
		m.norm = s
		return m
	}
	runs := strings.Count(s, "\r\n")
	m.crAt, m.crSum = make([]int, 0, runs), make([]int, 0, runs)
	var b strings.Builder
	b.Grow(len(s) - runs)
	removed := 0
	for i >= 0 {
		j := i
		for j > 0 && s[j-1] == '\r' {
			j--
		}
		b.WriteString(s[:j])
		removed += i + 1 - j
		m.crAt = append(m.crAt, b.Len())
		m.crSum = append(m.crSum, removed)
		b.WriteByte('\n')
		s = s[i+2:]
		i = strings.Index(s, "\r\n")
	}
	b.WriteString(s)
	m.norm = b.String()
	return m
}

// raw returns the offset in the original text of normalized offset p. An
// offset at an "\n" maps to the start of its "\r" run, so the run belongs
// to the line ending.
func (m *lineMap) raw(p int) int {
	k := sort.SearchInts(m.crAt, p)
	if k == 0 {
		return p
	}
	return p + m.crSum[k-1]
}

// style returns the dominant line-ending style of the whole text.
func (m *lineMap) style() Style {
	crlf := len(m.crAt)
	if crlf > strings.Count(m.norm, "\n")-crlf {
		return CRLF
	}
	return LF
}

// writeReplacement writes newNorm in place of the normalized span
// [start, end): its n-th "\n" takes the original ending of the span's n-th
// "\n", and dominant once the span has none left.
func (m *lineMap) writeReplacement(b *strings.Builder, newNorm string, start, end int, dominant string) {
	span := start
	for {
		i := strings.IndexByte(newNorm, '\n')
		if i < 0 {
			b.WriteString(newNorm)
			return
		}
		b.WriteString(newNorm[:i])
		ending := dominant
		if j := strings.IndexByte(m.norm[span:end], '\n'); j >= 0 {
			at := span + j
			ending = m.orig[m.raw(at):m.raw(at+1)]
			span = at + 1
		} else {
			span = end
		}
		b.WriteString(ending)
		newNorm = newNorm[i+1:]
	}
}

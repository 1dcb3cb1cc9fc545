package textfile

import (
	"errors"
	"strconv"
	"strings"
)

// ErrEmptyOld is returned by ApplyEdit when the string to replace is empty.
var ErrEmptyOld = errors.New("old_string must be a non-empty string")

// ErrNotFound is returned by ApplyEdit when the string to replace does not
// occur in the file's text.
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
	// NormalizeLF of Output with the BOM removed.
	After string
	// Output is the exact text to write back to disk: the BOM if the file
	// had one, followed by After in the file's line-ending style.
	Output string
	// Replacements is the number of occurrences replaced (at least 1).
	Replacements int
	// Style is the file's detected line-ending style, used for Output.
	Style Style
	// HasBOM reports whether the file started with a UTF-8 BOM, which
	// Output keeps.
	HasBOM bool
}

// ApplyEdit replaces oldString with newString in raw, the file's already
// validated, decoded text, preserving the file's BOM and line-ending style.
//
// Matching happens on LF-normalized text without the BOM: raw, oldString and
// newString are all passed through NormalizeLF, so an agent may give either
// line ending. Occurrences are counted non-overlapping, left to right. If
// replaceAll is false exactly one occurrence must exist; otherwise every
// occurrence is replaced.
//
// The errors are ErrEmptyOld if oldString is empty, ErrNotFound if it does
// not occur, and *AmbiguousError if it occurs more than once while replaceAll
// is false. On error the returned Edit is the zero value.
//
// A replacement can put a "\r" next to a "\n" at a splice boundary (for
// example when newString ends in a lone "\r"). Such a pair would read back as
// a line ending, so After is normalized once more and Output is derived from
// it; After is therefore always what a subsequent read will show.
func ApplyEdit(raw, oldString, newString string, replaceAll bool) (Edit, error) {
	if oldString == "" {
		return Edit{}, ErrEmptyOld
	}
	hasBOM, rest := SplitBOM(raw)
	style := DetectStyle(rest)
	before := NormalizeLF(rest)
	oldNorm := NormalizeLF(oldString)
	newNorm := NormalizeLF(newString)

	n := strings.Count(before, oldNorm)
	switch {
	case n == 0:
		return Edit{}, ErrNotFound
	case n > 1 && !replaceAll:
		return Edit{}, &AmbiguousError{Count: n}
	}

	after := NormalizeLF(strings.Replace(before, oldNorm, newNorm, n))

	output := Restore(after, style)
	if hasBOM {
		output = BOM + output
	}
	return Edit{
		Before:       before,
		After:        after,
		Output:       output,
		Replacements: n,
		Style:        style,
		HasBOM:       hasBOM,
	}, nil
}

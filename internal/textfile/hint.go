package textfile

import (
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// NotFoundError is returned by ApplyEdit when the string to replace does not
// occur in the file's text. When it occurs exactly once after one of the
// comparisons that hide differences a reader cannot see (Unicode
// normalization, line endings, trailing whitespace, indentation,
// typographic punctuation), Line is the 1-based line where that match
// starts and Differs says what differs there; otherwise Line is 0. The edit
// is never applied to such a match.
type NotFoundError struct {
	Line    int
	Differs string
}

// Error returns "old_string was not found", followed by the Hint when there
// is one.
func (e *NotFoundError) Error() string {
	if h := e.Hint(); h != "" {
		return ErrNotFound.Error() + "; " + h
	}
	return ErrNotFound.Error()
}

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Hint returns one sentence naming the line of the near match and what
// differs, or "" when there is no near match.
func (e *NotFoundError) Hint() string {
	if e.Line == 0 {
		return ""
	}
	return "line " + strconv.Itoa(e.Line) + " matches only " + e.Differs + "; old_string must match the file exactly, so nothing was changed"
}

// nearMatch is one comparison that hides a kind of difference: transform
// maps the file's text and old_string alike, keeping every "\n" (so that
// line numbers survive) unless sameOffsets says offsets are kept instead.
type nearMatch struct {
	transform   func(string) string
	sameOffsets bool
	differs     func(old string) string
}

var nearMatches = []nearMatch{
	{
		transform: norm.NFC.String,
		differs: func(old string) string {
			if norm.NFC.IsNormalString(old) {
				return "under Unicode normalization (NFC): the file has decomposed characters (a letter followed by a combining mark) where old_string has precomposed ones"
			}
			return "under Unicode normalization (NFC): old_string has decomposed characters (a letter followed by a combining mark) where the file has precomposed ones"
		},
	},
	{
		// Lone "\r" as a line break: one byte for one, so offsets are kept.
		transform:   func(s string) string { return strings.ReplaceAll(s, "\r", "\n") },
		sameOffsets: true,
		differs: func(string) string {
			return "when line endings are ignored: a lone carriage return (\\r) stands where the other text breaks the line"
		},
	},
	{
		transform: perLine(func(l string) string { return strings.TrimRight(l, " \t") }),
		differs:   func(string) string { return "when trailing whitespace is ignored" },
	},
	{
		transform: perLine(func(l string) string { return strings.Trim(l, " \t") }),
		differs:   func(string) string { return "when indentation is ignored" },
	},
	{
		transform: typographic.Replace,
		differs: func(string) string {
			return "when typographic quotes and dashes are read as ASCII ones (' \" -)"
		},
	},
}

// typographic maps typographic quotes, dashes, the ellipsis and the
// no-break space to their ASCII look-alikes.
var typographic = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'", "\u2032", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`, "\u2033", `"`,
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2026", "...", "\u00A0", " ",
)

// perLine applies f to each line of a text, keeping the line breaks.
func perLine(f func(string) string) func(string) string {
	return func(s string) string {
		var b strings.Builder
		b.Grow(len(s))
		for line := range strings.SplitAfterSeq(s, "\n") {
			body, nl := strings.CutSuffix(line, "\n")
			b.WriteString(f(body))
			if nl {
				b.WriteByte('\n')
			}
		}
		return b.String()
	}
}

// notFound returns the *NotFoundError for oldNorm missing from the
// normalized text before, with the first near match that occurs exactly
// once.
func notFound(before, oldNorm string) *NotFoundError {
	for _, nm := range nearMatches {
		file, old := nm.transform(before), nm.transform(oldNorm)
		if old == "" || strings.Count(file, old) != 1 {
			continue
		}
		at := strings.Index(file, old)
		lines := file
		if nm.sameOffsets {
			lines = before
		}
		return &NotFoundError{Line: strings.Count(lines[:at], "\n") + 1, Differs: nm.differs(oldNorm)}
	}
	return &NotFoundError{}
}

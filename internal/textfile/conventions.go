package textfile

import "strings"

// Conventions are what a text file carries besides its text: its encoding,
// whether it starts with a byte-order mark, and its line endings counted
// over the whole file.
type Conventions struct {
	Encoding Encoding
	BOM      bool
	Endings  Endings
}

// Write is the result of ConformWrite.
type Write struct {
	// Output is the text to store, in the prior file's Encoding.
	Output string
	// Note is one sentence naming what changed in the file's bytes beyond
	// its text (a byte-order mark added, line endings converted), or ""
	// when the file's conventions survive.
	Note string
}

// ConformWrite returns the text that replaces a file of conventions prior
// when content is written over it (spec difference 10, superseding Z-4).
// Content without a leading byte-order mark gets the file's mark back.
// Content without any "\r" takes the file's dominant line ending; content
// with an explicit "\r" is taken as given. Content never loses a mark it
// carries, so a mark is only ever added.
func ConformWrite(content string, prior Conventions) Write {
	hasBOM, rest := SplitBOM(content)
	if !strings.Contains(rest, "\r") {
		rest = Restore(rest, prior.Endings.Style())
	}
	out := rest
	if hasBOM || prior.BOM {
		out = BOM + rest
	}
	var next Endings
	next.Add(rest)
	return Write{Output: out, Note: changeNote(prior.BOM, hasBOM || prior.BOM, prior.Endings, next)}
}

// changeNote names the byte-level changes between a file's prior and next
// conventions in one sentence, or "" when there are none. Line endings
// count as converted when both texts have line endings and their dominant
// styles differ.
func changeNote(hadBOM, hasBOM bool, prior, next Endings) string {
	var parts []string
	switch {
	case hasBOM && !hadBOM:
		parts = append(parts, "byte-order mark added")
	case hadBOM && !hasBOM:
		parts = append(parts, "byte-order mark removed")
	}
	if prior.CRLF+prior.LF > 0 && next.CRLF+next.LF > 0 && prior.Style() != next.Style() {
		parts = append(parts, "line endings converted from "+prior.Style().String()+" to "+next.Style().String()+" as the content gives them")
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

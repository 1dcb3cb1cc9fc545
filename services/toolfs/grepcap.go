package toolfs

import (
	"strconv"

	"github.com/dsh-go/harness/services/fs"
)

// grepCut is what capGrepBytes left out of a content result: the matching
// lines and the bytes of all lines (each line's text and its newline), and
// whether the search had already stopped at its limit (more matches exist
// than were cut).
type grepCut struct {
	matches int
	bytes   int
	beyond  bool
}

// capGrepBytes keeps the lines of a content result, in order, while their
// texts and newlines add up to at most maxBytes (read's cap, ReadMaxBytes);
// the first line that would pass the cap and every line after it are left
// out, and a file left with no line is dropped. Counts are rewritten to the
// matching lines kept, so the text and the value agree. It returns the
// result and what was cut (zero when nothing was).
func capGrepBytes(res fs.GrepResult, maxBytes int) (fs.GrepResult, grepCut) {
	var cut grepCut
	used := 0
	files := make([]fs.GrepFile, 0, len(res.Files))
	for _, f := range res.Files {
		kept := fs.GrepFile{Path: f.Path}
		for _, l := range f.Lines {
			n := len(l.Text) + 1
			if cut.bytes == 0 && used+n <= maxBytes {
				used += n
				kept.Lines = append(kept.Lines, l)
				if l.Match {
					kept.Count++
				}
				continue
			}
			cut.bytes += n
			if l.Match {
				cut.matches++
			}
		}
		if len(kept.Lines) > 0 {
			files = append(files, kept)
		}
	}
	if cut.bytes == 0 {
		return res, cut
	}
	cut.beyond = res.Truncated
	res.Files = files
	res.Truncated = true
	return res, cut
}

// note is the footer sentence of a byte cut.
func (c grepCut) note(maxBytes int) string {
	more := ""
	if c.beyond {
		more = ", and more beyond limit"
	}
	return "Output capped at " + strconv.Itoa(maxBytes) + " bytes: " + plural(c.matches, "more matching line") +
		" (" + strconv.Itoa(c.bytes) + " bytes with context) left out" + more + ". Narrow the pattern, the path or the glob, or lower context."
}

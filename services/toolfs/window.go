package toolfs

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/harness/internal/textfile"
)

// Line is one numbered line of a read window.
type Line struct {
	Number int    `json:"number" jsonschema:"1-based line number"`
	Text   string `json:"text" jsonschema:"the line without its line ending, cut to the maximum line length"`
}

// countBudgetBytes is how many bytes a streamed read feeds the window past
// its last selected line to count the lines of the whole file (spec decision
// 17): about 60 ms of work here, so the footer of a window near the start of
// a huge file says more lines follow instead of scanning it all.
const countBudgetBytes = 64 << 20

// window selects the lines [offset, offset+limit) of a text fed in chunks,
// within a byte cap, while counting the lines of the text (T-34..T-51). It
// keeps at most maxLineLen+1 code points of the line being read, and only of
// a selected line, so memory is bounded by the cap whatever the text's size.
// With a budget, it counts for at most about budget bytes past the window:
// feed then reports false and the total is unknown (spec decision 17).
type window struct {
	offset, limit, maxLineLen, maxBytes int

	budget  int  // bytes counted past the window before giving up; 0: no limit
	after   int  // bytes fed past the window
	stopped bool // the budget ran out: more lines follow, the total is unknown

	lines  []Line
	total  int  // complete lines seen
	bytes  int  // bytes of the selected lines, joining newlines included
	capped bool // a line was refused by the byte cap

	cur      strings.Builder // kept code points of the current line
	kept     int             // code points in cur
	seen     int             // code points of the current line so far
	partial  bool            // the current line has started
	firstBOM bool            // the first line's byte-order mark was handled
}

func newWindow(offset, limit, maxLineLen, maxBytes int) *window {
	return &window{offset: offset, limit: limit, maxLineLen: maxLineLen, maxBytes: maxBytes}
}

// selecting reports whether the current line is inside the window.
func (w *window) selecting() bool {
	n := w.total + 1
	return !w.capped && n >= w.offset && n < w.offset+w.limit
}

// past reports whether the window is complete: the current line lies after
// it, or the byte cap refused a line.
func (w *window) past() bool {
	return w.capped || w.total+1 >= w.offset+w.limit
}

// feed consumes the next chunk (chunks never split a code point) and reports
// whether the window wants more: false once the count budget is spent, the
// chunk then left unread.
func (w *window) feed(chunk string) bool {
	if w.stopped {
		return false
	}
	if w.budget > 0 && chunk != "" && w.past() {
		w.after += len(chunk)
		if w.after > w.budget {
			// Bytes follow the window, so at least one line does.
			w.stopped = true
			return false
		}
	}
	if !w.firstBOM && chunk != "" {
		w.firstBOM = true
		// The read tool does not show a leading byte-order mark as part
		// of line 1 (spec decision 4).
		chunk = strings.TrimPrefix(chunk, textfile.BOM)
	}
	for chunk != "" {
		part, rest, newline := strings.Cut(chunk, "\n")
		chunk = rest
		if part != "" {
			w.partial = true
			if w.selecting() {
				w.keep(part)
			} else {
				w.seen++ // only "more than zero" matters for an unselected line
			}
		}
		if newline {
			w.endLine()
		}
	}
	return true
}

// keep appends up to maxLineLen+1 code points of part to the current line.
func (w *window) keep(part string) {
	n := utf8.RuneCountInString(part)
	w.seen += n
	room := w.maxLineLen + 1 - w.kept
	if room <= 0 {
		return
	}
	if n > room {
		part, n = cutRunes(part, room), room
	}
	w.cur.WriteString(part)
	w.kept += n
}

// endLine closes the current line.
func (w *window) endLine() {
	if w.selecting() {
		text := w.cur.String()
		runes := w.kept
		if w.seen == w.kept && strings.HasSuffix(text, "\r") {
			// One trailing CR is part of the line ending (T-36).
			text = text[:len(text)-1]
			runes--
		}
		if runes > w.maxLineLen {
			text = cutRunes(text, w.maxLineLen) + "... (line truncated to " + strconv.Itoa(w.maxLineLen) + " chars)"
		}
		add := len(text)
		if len(w.lines) > 0 {
			add++
		}
		if w.bytes+add > w.maxBytes {
			w.capped = true
		} else {
			w.bytes += add
			w.lines = append(w.lines, Line{Number: w.total + 1, Text: text})
		}
	}
	w.total++
	w.cur.Reset()
	w.kept, w.seen, w.partial = 0, 0, false
}

// finish closes a final line without a trailing newline (T-41); after a
// stop it changes nothing.
func (w *window) finish() {
	if w.partial && !w.stopped {
		w.endLine()
	}
}

// outOfRange reports whether offset lies past the end: only offset 1 of an
// empty text is allowed beyond the last line (T-39, T-40).
func (w *window) outOfRange() bool {
	return !w.stopped && w.offset > w.total && (w.offset != 1 || w.total != 0)
}

// totalLines is the number of lines of the text, or nil when the count
// budget ran out first.
func (w *window) totalLines() *int {
	if w.stopped {
		return nil
	}
	total := w.total
	return &total
}

// end returns the last returned line number, or offset-1 (at least 0) when
// none was returned.
func (w *window) end() int {
	if len(w.lines) > 0 {
		return w.lines[len(w.lines)-1].Number
	}
	return max(w.offset-1, 0)
}

// footer is the one footer of the read envelope (T-50, T-51); when the
// total is unknown it says that more lines follow (spec decision 17).
func (w *window) footer() string {
	end := w.end()
	next := strconv.Itoa(end + 1)
	more := w.stopped || end < w.total
	switch {
	case len(w.lines) < w.limit && more:
		return "(Output capped. Showing lines " + strconv.Itoa(w.offset) + "-" + strconv.Itoa(end) + ". Use offset=" + next + " to continue.)"
	case w.stopped:
		return "(Showing lines " + strconv.Itoa(w.offset) + "-" + strconv.Itoa(end) + "; more lines follow. Use offset=" + next + " to continue.)"
	case end < w.total:
		return "(Showing lines " + strconv.Itoa(w.offset) + "-" + strconv.Itoa(end) + " of " + strconv.Itoa(w.total) + ". Use offset=" + next + " to continue.)"
	default:
		return "(End of file - total " + strconv.Itoa(w.total) + " lines)"
	}
}

// cutRunes returns the first n code points of s.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

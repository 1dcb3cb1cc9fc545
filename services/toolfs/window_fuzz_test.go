//go:build linux

package toolfs

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// fuzzWindowMaxText caps the bytes of the fuzzed text: the engine minimizes
// each new interesting input with about n²/2 candidates, so long inputs stall
// its workers; the small clamped limits below reach every rule with short
// texts.
const fuzzWindowMaxText = 256

// fuzzFooter matches exactly the three footer forms (T-50, T-51).
var fuzzFooter = regexp.MustCompile(`^(?:` +
	`\(Output capped\. Showing lines [0-9]+-[0-9]+\. Use offset=[0-9]+ to continue\.\)` + `|` +
	`\(Showing lines [0-9]+-[0-9]+ of [0-9]+\. Use offset=[0-9]+ to continue\.\)` + `|` +
	`\(End of file - total [0-9]+ lines\)` + `)$`)

// FuzzReadWindow compares the chunked window builder with a whole-text
// reading of the spec's rules (T-34..T-51, decisions 2 and 4), and checks its
// memory bound (T-46) after every chunk.
func FuzzReadWindow(f *testing.F) {
	// Seeds give the effective values (offset 1..12, limit 1..12, maxLineLen
	// 1..16, maxBytes 1..128, chunk 1..17 code points).
	seeds := []struct {
		text                                       string
		offset, limit, maxLineLen, maxBytes, chunk int
	}{
		{"one\ntwo\nthree", 1, 12, 16, 128, 17},
		{"one\ntwo\nthree\nfour", 2, 2, 16, 128, 2},
		{"one\r\ntwo\r", 1, 12, 16, 128, 2},
		{"a\r\r\nb\rc\n\r\n", 1, 12, 16, 128, 1},
		{"abc\r\nabcd\r\nab\r\r\n", 1, 12, 3, 128, 3},
		{"abcdefghij", 1, 12, 5, 128, 4},
		{"aaaa\nbbbb\ncccc", 1, 12, 16, 9, 2},
		{"aaaa\nbbbb", 1, 12, 16, 9, 1},
		{"éé\néé\nx", 1, 12, 16, 9, 2},
		{"a\nbbbb\ncccc", 2, 12, 16, 9, 5},
		{"aaaa\nbbbbbbbb\nc", 1, 12, 16, 7, 3},
		{"a\nb\ncccc\nd", 3, 12, 16, 3, 1},
		{"cccc", 1, 1, 16, 3, 1},
		{"a\nb", 1, 2, 16, 1, 1},
		{"", 1, 1, 1, 1, 1},
		{"", 2, 1, 1, 1, 1},
		{"one\ntwo", 9, 12, 16, 128, 1},
		{"one\ntwo\n", 3, 1, 1, 1, 1},
		{"a\n\n", 1, 12, 16, 128, 1},
		{"\n", 1, 1, 1, 1, 1},
		{"\uFEFF", 1, 12, 16, 128, 1},
		{"\uFEFF\n", 1, 12, 16, 128, 1},
		{"\uFEFFabcd\nx", 1, 12, 4, 4, 1},
		{"\uFEFF\uFEFFa", 1, 12, 16, 128, 2},
		{"a\uFEFF\n\uFEFFb", 1, 12, 16, 128, 2},
		{"😀😀😀😀😀😀\n😀😀😀😀😀\naé😀b\u00a0cdef", 1, 12, 5, 128, 3},
		{strings.Repeat("x\n", 20), 4, 2, 16, 128, 6},
		{strings.Repeat("é", 60) + "\nz", 1, 12, 7, 128, 17},
		{"ab\r", 1, 12, 2, 128, 1},
		{"abc\r\n", 1, 12, 3, 128, 3},
	}
	for _, s := range seeds {
		f.Add(s.text, uint16(s.offset-1), uint16(s.limit-1), uint16(s.maxLineLen-1), uint16(s.maxBytes-1), uint8(s.chunk-1))
	}
	f.Fuzz(func(t *testing.T, text string, offset, limit, maxLineLen, maxBytes uint16, chunk uint8) {
		if len(text) > fuzzWindowMaxText {
			t.Skip("input too large")
		}
		// The window takes decoded text: map invalid bytes rather than
		// waste the input.
		text = strings.ToValidUTF8(text, "\uFFFD")
		o, l := int(offset)%12+1, int(limit)%12+1
		mll, mb := int(maxLineLen)%16+1, int(maxBytes)%128+1
		n := int(chunk)%17 + 1

		w := newWindow(o, l, mll, mb)
		for _, c := range fuzzChunks(text, n) {
			w.feed(c)
			// T-46: the kept buffer of the current line is bounded, and an
			// unselected line keeps nothing.
			kept := utf8.RuneCountInString(w.cur.String())
			require.Equal(t, w.kept, kept, "kept counts the buffer's code points")
			require.LessOrEqual(t, kept, mll+1, "kept code points after feeding %q", c)
			require.LessOrEqual(t, w.cur.Len(), (mll+1)*utf8.UTFMax, "kept bytes")
			if !w.selecting() {
				require.Zero(t, kept, "an unselected line keeps nothing")
			}
		}
		w.finish()

		want, total, capped := fuzzWindowReference(text, o, l, mll, mb)
		got := w.lines
		if got == nil {
			got = []Line{}
		}
		require.Equal(t, want, got, "lines")
		require.Equal(t, total, w.total, "total")
		require.Equal(t, capped, w.capped, "capped")
		outOfRange := o > total && (o != 1 || total != 0)
		require.Equal(t, outOfRange, w.outOfRange(), "outOfRange")
		if outOfRange {
			return // the read fails with INVALID_ARGUMENT; no footer is shown
		}
		footer := w.footer()
		require.Regexp(t, fuzzFooter, footer)
		require.Equal(t, fuzzFooterReference(want, total, o, l), footer)
		require.Equal(t, capped, strings.HasPrefix(footer, "(Output capped."), "the capped footer appears exactly when a line was refused")
	})
}

// fuzzChunks splits s into chunks of n code points; no chunk is empty or
// splits a code point, as StreamText promises.
func fuzzChunks(s string, n int) []string {
	var out []string
	for s != "" {
		i := 0
		for k := 0; k < n && i < len(s); k++ {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// fuzzWindowReference is the spec's window, read off the whole text: the
// leading byte-order mark is not part of line 1 (decision 4; a BOM alone is
// an empty text), lines split on "\n" with no trailing empty line (T-42), one
// trailing "\r" stripped per line (T-36), truncation to maxLineLen code points
// plus the suffix (T-37, T-43, decision 2), bytes = UTF-8 length of each
// selected truncated line + 1 per joining newline, and the first line that
// would exceed maxBytes refused and ends the selection (T-44, T-50); total is
// always exact (T-49).
func fuzzWindowReference(text string, offset, limit, maxLineLen, maxBytes int) (lines []Line, total int, capped bool) {
	text = strings.TrimPrefix(text, "\uFEFF")
	var all []string
	if text != "" {
		all = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	lines = []Line{}
	used := 0
	for i := offset - 1; i < len(all) && i < offset-1+limit; i++ {
		s := strings.TrimSuffix(all[i], "\r")
		if r := []rune(s); len(r) > maxLineLen {
			s = string(r[:maxLineLen]) + "... (line truncated to " + strconv.Itoa(maxLineLen) + " chars)"
		}
		add := len(s)
		if len(lines) > 0 {
			add++
		}
		if used+add > maxBytes {
			capped = true
			break
		}
		used += add
		lines = append(lines, Line{Number: i + 1, Text: s})
	}
	return lines, len(all), capped
}

// fuzzFooterReference is the footer of T-50 and T-51: "capped" when fewer
// lines than the limit came back and lines remain, "more" when only lines
// remain, else the end of file; end falls back to offset-1.
func fuzzFooterReference(lines []Line, total, offset, limit int) string {
	end := max(offset-1, 0)
	if len(lines) > 0 {
		end = lines[len(lines)-1].Number
	}
	shown := strconv.Itoa(offset) + "-" + strconv.Itoa(end)
	next := strconv.Itoa(end + 1)
	switch {
	case len(lines) < limit && end < total:
		return "(Output capped. Showing lines " + shown + ". Use offset=" + next + " to continue.)"
	case end < total:
		return "(Showing lines " + shown + " of " + strconv.Itoa(total) + ". Use offset=" + next + " to continue.)"
	default:
		return "(End of file - total " + strconv.Itoa(total) + " lines)"
	}
}

//go:build linux

package toolfs

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wTrunc is kept followed by the truncation suffix for n.
func wTrunc(kept string, n int) string {
	return kept + "... (line truncated to " + strconv.Itoa(n) + " chars)"
}

// wChunks splits s into chunks of n code points (n <= 0: one chunk), so no
// chunk splits a code point, as the backends promise.
func wChunks(s string, n int) []string {
	if n <= 0 || s == "" {
		return []string{s}
	}
	var out []string
	for s != "" {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// wRun feeds text to a new window in chunks of chunk code points.
func wRun(text string, chunk, offset, limit, maxLineLen, maxBytes int) *window {
	w := newWindow(offset, limit, maxLineLen, maxBytes)
	for _, c := range wChunks(text, chunk) {
		w.feed(c)
	}
	w.finish()
	return w
}

// wNum numbers texts from first.
func wNum(first int, texts ...string) []Line {
	out := []Line{}
	for i, s := range texts {
		out = append(out, Line{Number: first + i, Text: s})
	}
	return out
}

// wLines returns w's lines, never nil, for comparisons.
func wLines(w *window) []Line {
	if w.lines == nil {
		return []Line{}
	}
	return w.lines
}

// TestWindow pins the pure window builder (T-34..T-51 and the BOM
// decision), fed whole and in several chunkings.
func TestWindow(t *testing.T) {
	const (
		defLen   = DefaultReadMaxLineLength
		defBytes = DefaultReadMaxBytes
		defLimit = DefaultReadLimit
	)
	y100 := strings.Repeat("y", 100)
	lines2000 := strings.TrimSuffix(strings.Repeat(y100+"\n", 2000), "\n")
	cases := []struct {
		name                       string
		text                       string
		offset, limit, maxLen, max int
		want                       []Line
		total                      int
		capped                     bool
		outOfRange                 bool
		footer                     string
	}{
		{
			name: "T-34 three lines", text: "one\ntwo\nthree", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "one", "two", "three"), total: 3, footer: "(End of file - total 3 lines)",
		},
		{
			name: "T-35 offset 2 limit 2 of 4", text: "one\ntwo\nthree\nfour", offset: 2, limit: 2, maxLen: defLen, max: defBytes,
			want: wNum(2, "two", "three"), total: 4, footer: "(Showing lines 2-3 of 4. Use offset=4 to continue.)",
		},
		{
			name: "T-36 CRLF", text: "one\r\ntwo\r\n", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "one", "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-36 CR on a final unterminated line", text: "one\r\ntwo\r", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "one", "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-36 one CR only, inner CRs kept", text: "a\r\r\nb\rc\n\r\n", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "a\r", "b\rc", ""), total: 3, footer: "(End of file - total 3 lines)",
		},
		{
			name: "T-36 CR stripped before measuring", text: "abc\r\nabcd\r\nab\r\r\n", offset: 1, limit: defLimit, maxLen: 3, max: defBytes,
			want: wNum(1, "abc", wTrunc("abc", 3), "ab\r"), total: 3, footer: "(End of file - total 3 lines)",
		},
		{
			name: "T-37 3000-char line", text: strings.Repeat("x", 3000), offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, wTrunc(strings.Repeat("x", 2000), 2000)), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-37 3000 two-byte code points", text: strings.Repeat("é", 3000), offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, wTrunc(strings.Repeat("é", 2000), 2000)), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-37 2000 emoji are not truncated (UTF-16 would count 4000)", text: strings.Repeat("😀", 2000), offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, strings.Repeat("😀", 2000)), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-38 byte cap on 2000 lines of 100", text: lines2000, offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, strings.Split(strings.Repeat(y100+"\n", 506), "\n")[:506]...), total: 2000, capped: true,
			footer: "(Output capped. Showing lines 1-506. Use offset=507 to continue.)",
		},
		{
			name: "T-39 empty text at offset 1", text: "", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1), total: 0, footer: "(End of file - total 0 lines)",
		},
		{
			name: "T-40 offset 9 of 2 lines", text: "one\ntwo", offset: 9, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1), total: 2, outOfRange: true,
		},
		{
			name: "T-40 empty text at offset 2", text: "", offset: 2, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1), total: 0, outOfRange: true,
		},
		{
			name: "T-40 offset just past a trailing newline", text: "one\ntwo\n", offset: 3, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1), total: 2, outOfRange: true,
		},
		{
			name: "T-41 final line without newline", text: "one\ntwo", offset: 2, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(2, "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-42 trailing newline adds no line", text: "one\ntwo\n", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "one", "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-42 a\\n\\n is two lines", text: "a\n\n", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "a", ""), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-42 a lone newline is one empty line", text: "\n", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, ""), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-43 maxLineLength 5", text: "abcdefghij", offset: 1, limit: defLimit, maxLen: 5, max: defBytes,
			want: wNum(1, "abcde... (line truncated to 5 chars)"), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-43 exactly maxLineLength is not truncated", text: "abcde\nabcdef", offset: 1, limit: defLimit, maxLen: 5, max: defBytes,
			want: wNum(1, "abcde", wTrunc("abcde", 5)), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-43 two-byte code points", text: "ééééééé\néééé", offset: 1, limit: defLimit, maxLen: 5, max: defBytes,
			want: wNum(1, wTrunc("ééééé", 5), "éééé"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-43 emoji never split", text: strings.Repeat("😀", 6) + "\n" + strings.Repeat("😀", 5) + "\naé😀b\u00a0cdef", offset: 1, limit: defLimit, maxLen: 5, max: defBytes,
			want: wNum(1, wTrunc(strings.Repeat("😀", 5), 5), strings.Repeat("😀", 5), wTrunc("aé😀b\u00a0", 5)), total: 3, footer: "(End of file - total 3 lines)",
		},
		{
			name: "T-44 maxBytes 9", text: "aaaa\nbbbb\ncccc", offset: 1, limit: defLimit, maxLen: defLen, max: 9,
			want: wNum(1, "aaaa", "bbbb"), total: 3, capped: true, footer: "(Output capped. Showing lines 1-2. Use offset=3 to continue.)",
		},
		{
			name: "T-44 equal to the cap is accepted", text: "aaaa\nbbbb", offset: 1, limit: defLimit, maxLen: defLen, max: 9,
			want: wNum(1, "aaaa", "bbbb"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-44 bytes are UTF-8 bytes", text: "éé\néé\nx", offset: 1, limit: defLimit, maxLen: defLen, max: 9,
			want: wNum(1, "éé", "éé"), total: 3, capped: true, footer: "(Output capped. Showing lines 1-2. Use offset=3 to continue.)",
		},
		{
			name: "T-44 the newline of the first selected line is not counted", text: "a\nbbbb\ncccc", offset: 2, limit: defLimit, maxLen: defLen, max: 9,
			want: wNum(2, "bbbb", "cccc"), total: 3, footer: "(End of file - total 3 lines)",
		},
		{
			name: "T-44 a refused line stops the window even if a later one fits", text: "aaaa\nbbbbbbbb\nc", offset: 1, limit: defLimit, maxLen: defLen, max: 7,
			want: wNum(1, "aaaa"), total: 3, capped: true, footer: "(Output capped. Showing lines 1-1. Use offset=2 to continue.)",
		},
		{
			name: "T-49 lines after the window are counted", text: strings.Repeat("l\n", 10), offset: 4, limit: 2, maxLen: defLen, max: defBytes,
			want: wNum(4, "l", "l"), total: 10, footer: "(Showing lines 4-5 of 10. Use offset=6 to continue.)",
		},
		{
			name: "T-50 first selected line alone exceeds the cap", text: "a\nb\ncccc\nd", offset: 3, limit: defLimit, maxLen: defLen, max: 3,
			want: wNum(1), total: 4, capped: true, footer: "(Output capped. Showing lines 3-2. Use offset=3 to continue.)",
		},
		{
			name: "T-50 zero lines at offset 1", text: "cccc", offset: 1, limit: 1, maxLen: defLen, max: 3,
			want: wNum(1), total: 1, capped: true, footer: "(Output capped. Showing lines 1-0. Use offset=1 to continue.)",
		},
		{
			name: "T-51 capped", text: "a\nb", offset: 1, limit: 2, maxLen: defLen, max: 1,
			want: wNum(1, "a"), total: 2, capped: true, footer: "(Output capped. Showing lines 1-1. Use offset=2 to continue.)",
		},
		{
			name: "T-51 more", text: strings.Repeat("x\n", 99), offset: 1, limit: 1, maxLen: defLen, max: defBytes,
			want: wNum(1, "x"), total: 99, footer: "(Showing lines 1-1 of 99. Use offset=2 to continue.)",
		},
		{
			name: "T-51 end of file says 1 lines", text: "x", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "x"), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-51 limit reached exactly at the end", text: "a\nb", offset: 1, limit: 2, maxLen: defLen, max: defBytes,
			want: wNum(1, "a", "b"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "BOM is not part of line 1", text: "\uFEFFone\ntwo", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "one", "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "BOM alone is an empty text", text: "\uFEFF", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1), total: 0, footer: "(End of file - total 0 lines)",
		},
		{
			name: "BOM then newline is one empty line", text: "\uFEFF\n", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, ""), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "BOM counts toward neither length nor bytes", text: "\uFEFFabcd\nx", offset: 1, limit: defLimit, maxLen: 4, max: 4,
			want: wNum(1, "abcd"), total: 2, capped: true, footer: "(Output capped. Showing lines 1-1. Use offset=2 to continue.)",
		},
		{
			name: "BOM elsewhere is text", text: "a\uFEFF\n\uFEFFb", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "a\uFEFF", "\uFEFFb"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "only one leading BOM is dropped", text: "\uFEFF\uFEFFa", offset: 1, limit: defLimit, maxLen: defLen, max: defBytes,
			want: wNum(1, "\uFEFFa"), total: 1, footer: "(End of file - total 1 lines)",
		},
	}
	for _, tc := range cases {
		for _, chunk := range []int{0, 1, 2, 3, 7, 256} {
			t.Run(tc.name+"/chunk="+strconv.Itoa(chunk), func(t *testing.T) {
				w := wRun(tc.text, chunk, tc.offset, tc.limit, tc.maxLen, tc.max)
				assert.Equal(t, tc.want, wLines(w))
				assert.Equal(t, tc.total, w.total, "total")
				assert.Equal(t, tc.capped, w.capped, "capped")
				assert.Equal(t, tc.outOfRange, w.outOfRange(), "outOfRange")
				if !tc.outOfRange {
					assert.Equal(t, tc.footer, w.footer())
				}
			})
		}
	}
}

// TestWindowChunked pins the chunked cases verbatim (T-45..T-48).
func TestWindowChunked(t *testing.T) {
	t.Run("T-45 2-char chunks offset 2 limit 1", func(t *testing.T) {
		w := wRun("one\ntwo\nthree", 2, 2, 1, DefaultReadMaxLineLength, DefaultReadMaxBytes)
		assert.Equal(t, wNum(2, "two"), w.lines)
		assert.Equal(t, 3, w.total)
		assert.False(t, w.capped)
	})
	t.Run("T-47 byte cap mid-stream keeps counting", func(t *testing.T) {
		text := strings.Repeat(strings.Repeat("z", 100)+"\n", 2000)
		for _, chunk := range []int{1, 99, 100, 101, 4096, 65536} {
			w := wRun(text, chunk, 1, DefaultReadLimit, DefaultReadMaxLineLength, DefaultReadMaxBytes)
			assert.True(t, w.capped, "chunk %d", chunk)
			assert.Len(t, w.lines, 506, "chunk %d", chunk)
			assert.Equal(t, 2000, w.total, "T-49: total exact after the cap, chunk %d", chunk)
			assert.Equal(t, "(Output capped. Showing lines 1-506. Use offset=507 to continue.)", w.footer())
		}
	})
	t.Run("T-48 3-char chunks", func(t *testing.T) {
		w := wRun("one\ntwo\n", 3, 1, DefaultReadLimit, DefaultReadMaxLineLength, DefaultReadMaxBytes)
		assert.Equal(t, wNum(1, "one", "two"), w.lines)
		assert.Equal(t, 2, w.total)
	})
	t.Run("T-48 CR and LF in separate chunks", func(t *testing.T) {
		w := newWindow(1, DefaultReadLimit, DefaultReadMaxLineLength, DefaultReadMaxBytes)
		for _, c := range []string{"on", "e\r", "\ntw", "o\r", "\n"} {
			w.feed(c)
		}
		w.finish()
		assert.Equal(t, wNum(1, "one", "two"), w.lines)
		assert.Equal(t, 2, w.total)
	})
	t.Run("BOM as a chunk of its own", func(t *testing.T) {
		w := newWindow(1, DefaultReadLimit, DefaultReadMaxLineLength, DefaultReadMaxBytes)
		for _, c := range []string{"\uFEFF", "one\n", "\uFEFFtwo"} {
			w.feed(c)
		}
		w.finish()
		assert.Equal(t, wNum(1, "one", "\uFEFFtwo"), w.lines)
	})
}

// TestWindowBoundedBuffer: a long newline-free line never makes the builder
// keep more than maxLineLength+1 code points of it, counted in code points
// (T-46); an unselected line keeps none.
func TestWindowBoundedBuffer(t *testing.T) {
	cases := []struct {
		name   string
		unit   string
		offset int
		maxLen int
	}{
		{name: "T-46 ASCII 5000 chars in 256-char chunks", unit: "a", offset: 1, maxLen: DefaultReadMaxLineLength},
		{name: "T-46 two-byte code points", unit: "é", offset: 1, maxLen: DefaultReadMaxLineLength},
		{name: "T-46 four-byte code points", unit: "😀", offset: 1, maxLen: DefaultReadMaxLineLength},
		{name: "T-46 small maxLineLength", unit: "é", offset: 1, maxLen: 7},
		{name: "T-46 unselected line keeps nothing", unit: "😀", offset: 2, maxLen: DefaultReadMaxLineLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindow(tc.offset, DefaultReadLimit, tc.maxLen, DefaultReadMaxBytes)
			peak := 0
			for _, c := range wChunks(strings.Repeat(tc.unit, 5000), 256) {
				w.feed(c)
				kept := utf8.RuneCountInString(w.cur.String())
				peak = max(peak, kept)
				require.LessOrEqual(t, kept, tc.maxLen+1, "kept code points")
				require.Equal(t, kept, w.kept)
				require.LessOrEqual(t, w.cur.Len(), (tc.maxLen+1)*utf8.RuneLen([]rune(tc.unit)[0]), "kept bytes")
			}
			w.feed("\nnext")
			w.finish()
			assert.Equal(t, 2, w.total)
			if tc.offset == 1 {
				assert.Equal(t, tc.maxLen+1, peak)
				require.NotEmpty(t, w.lines)
				assert.Equal(t, wTrunc(strings.Repeat(tc.unit, tc.maxLen), tc.maxLen), w.lines[0].Text)
			} else {
				assert.Zero(t, peak)
				assert.Equal(t, wNum(2, "next"), w.lines)
			}
		})
	}
}

// wReference is a direct, whole-text reading of the spec's window rules
// (T-34..T-51, decisions 2 and 4), against which the chunked builder is
// compared.
func wReference(text string, offset, limit, maxLen, maxBytes int) (lines []Line, total int, capped bool) {
	text = strings.TrimPrefix(text, "\uFEFF")
	var all []string
	if text != "" {
		all = strings.Split(text, "\n")
		if strings.HasSuffix(text, "\n") {
			all = all[:len(all)-1]
		}
	}
	lines = []Line{}
	bytes := 0
	for i := offset - 1; i < len(all) && i < offset-1+limit; i++ {
		s := strings.TrimSuffix(all[i], "\r")
		if r := []rune(s); len(r) > maxLen {
			s = wTrunc(string(r[:maxLen]), maxLen)
		}
		add := len(s)
		if len(lines) > 0 {
			add++
		}
		if bytes+add > maxBytes {
			capped = true
			break
		}
		bytes += add
		lines = append(lines, Line{Number: i + 1, Text: s})
	}
	return lines, len(all), capped
}

// TestWindowMatchesReference compares the builder, fed in random chunkings,
// with the reference on random texts over an alphabet of the characters that
// matter (T-45..T-49).
func TestWindowMatchesReference(t *testing.T) {
	alphabet := []string{"a", "b", "é", "😀", "\r", "\n", "\n", "\uFEFF", "\u00a0"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := b.String()
		offset, limit := 1+rng.IntN(6), 1+rng.IntN(6)
		maxLen, maxBytes := 1+rng.IntN(8), rng.IntN(60)
		wantLines, wantTotal, wantCapped := wReference(text, offset, limit, maxLen, maxBytes)
		chunk := rng.IntN(6) // 0: whole
		w := wRun(text, chunk, offset, limit, maxLen, maxBytes)
		ok := assert.Equal(t, wantLines, wLines(w), "lines") &&
			assert.Equal(t, wantTotal, w.total, "total") &&
			assert.Equal(t, wantCapped, w.capped, "capped")
		if !ok {
			t.Fatalf("case %d: text %q chunk %d offset %d limit %d maxLen %d maxBytes %d", i, text, chunk, offset, limit, maxLen, maxBytes)
		}
	}
}

// TestRenderRead pins the envelope around the window (spec section 1,
// T-51: zero lines leave the footer alone in the body).
func TestRenderRead(t *testing.T) {
	cases := []struct {
		name string
		text string
		want string
	}{
		{name: "T-51 empty is footer only", text: "", want: "<path>/w/a.txt</path>\n<type>file</type>\n<content>\n(End of file - total 0 lines)\n</content>"},
		{name: "T-18 two lines", text: "hello\nworld", want: "<path>/w/a.txt</path>\n<type>file</type>\n<content>\n1: hello\n2: world\n\n(End of file - total 2 lines)\n</content>"},
		{name: "T-42 empty line keeps its space", text: "\n", want: "<path>/w/a.txt</path>\n<type>file</type>\n<content>\n1: \n\n(End of file - total 1 lines)\n</content>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := wRun(tc.text, 0, 1, DefaultReadLimit, DefaultReadMaxLineLength, DefaultReadMaxBytes)
			assert.Equal(t, tc.want, renderRead("/w/a.txt", w))
		})
	}
}

func TestWindowBOMAfterAnEmptyChunk(t *testing.T) {
	w := newWindow(1, 10, 100, 1000)
	w.feed("")
	w.feed("\ufeffab\ncd")
	w.finish()
	require.Len(t, w.lines, 2)
	assert.Equal(t, "ab", w.lines[0].Text, "an empty first chunk does not use up the byte-order-mark rule")
}

// TestWindowCountBudget (spec decision 17): past the window the lines are
// counted for about budget bytes only; then feed reports false, the total is
// unknown and the footer says more lines follow. Within the budget the total
// stays exact.
func TestWindowCountBudget(t *testing.T) {
	text := strings.Repeat("0123456789\n", 100) // 100 lines of 11 bytes
	cases := []struct {
		name                  string
		offset, limit, budget int
		maxBytes              int
		wantStopped           bool
		wantLines             int
		footer                string
	}{
		{
			name: "the budget runs out past a window at the start", offset: 1, limit: 2, budget: 50, maxBytes: 1000,
			wantStopped: true, wantLines: 2, footer: "(Showing lines 1-2; more lines follow. Use offset=3 to continue.)",
		},
		{
			name: "a window capped by bytes keeps its capped footer", offset: 1, limit: 10, budget: 50, maxBytes: 21,
			wantStopped: true, wantLines: 2, footer: "(Output capped. Showing lines 1-2. Use offset=3 to continue.)",
		},
		{
			name: "the budget starts after the window, however far it is", offset: 90, limit: 2, budget: 50, maxBytes: 1000,
			wantStopped: true, wantLines: 2, footer: "(Showing lines 90-91; more lines follow. Use offset=92 to continue.)",
		},
		{
			name: "a window near the end counts exactly", offset: 97, limit: 2, budget: 50, maxBytes: 1000,
			wantLines: 2, footer: "(Showing lines 97-98 of 100. Use offset=99 to continue.)",
		},
		{
			name: "a large enough budget counts exactly", offset: 1, limit: 2, budget: 2000, maxBytes: 1000,
			wantLines: 2, footer: "(Showing lines 1-2 of 100. Use offset=3 to continue.)",
		},
		{
			name: "no budget counts exactly", offset: 1, limit: 2, maxBytes: 1000,
			wantLines: 2, footer: "(Showing lines 1-2 of 100. Use offset=3 to continue.)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindow(tc.offset, tc.limit, 2000, tc.maxBytes)
			w.budget = tc.budget
			fed := 0
			for _, c := range wChunks(text, 11) {
				if !w.feed(c) {
					break
				}
				fed += len(c)
			}
			w.finish()
			assert.Equal(t, tc.wantStopped, w.stopped)
			assert.Len(t, w.lines, tc.wantLines)
			assert.Equal(t, tc.footer, w.footer())
			assert.False(t, w.outOfRange())
			if tc.wantStopped {
				assert.Nil(t, w.totalLines())
				assert.Less(t, fed, len(text), "the rest of the text is never fed")
				assert.False(t, w.feed("more\n"), "a stopped window takes nothing more")
			} else {
				require.NotNil(t, w.totalLines())
				assert.Equal(t, 100, *w.totalLines())
			}
		})
	}
}

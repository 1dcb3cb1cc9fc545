//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/readbeforewrite"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// rdLines numbers texts from first.
func rdLines(first int, texts ...string) []toolfs.Line {
	lines := make([]toolfs.Line, 0, len(texts))
	for i, s := range texts {
		lines = append(lines, toolfs.Line{Number: first + i, Text: s})
	}
	return lines
}

// rdBody is the envelope body of lines and footer (spec section 1).
func rdBody(lines []toolfs.Line, footer string) string {
	if len(lines) == 0 {
		return footer
	}
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		parts = append(parts, strconv.Itoa(l.Number)+": "+l.Text)
	}
	return strings.Join(parts, "\n") + "\n\n" + footer
}

// rdRepeatLines returns n copies of line.
func rdRepeatLines(n int, line string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = line
	}
	return out
}

// TestReadEnvelope pins the exact model-facing text and the structured
// value of successful reads, through the whole-file path and the streamed
// path alike.
func TestReadEnvelope(t *testing.T) {
	y100 := strings.Repeat("y", 100)
	trunc := func(kept string, n int) string {
		return kept + "... (line truncated to " + strconv.Itoa(n) + " chars)"
	}
	numbered := make([]string, 10)
	for i := range numbered {
		numbered[i] = strconv.Itoa(i + 1)
	}
	cases := []struct {
		name    string
		cfg     toolfs.Config
		content string
		offset  int // 0: not given
		limit   int // 0: not given
		lines   []toolfs.Line
		total   int
		footer  string
	}{
		{
			name: "T-18 hello world", content: "hello\nworld",
			lines: rdLines(1, "hello", "world"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-19 empty file", content: "",
			lines: rdLines(1), total: 0, footer: "(End of file - total 0 lines)",
		},
		{
			name: "T-29 offset 2 limit 2 of 4", content: "one\ntwo\nthree\nfour", offset: 2, limit: 2,
			lines: rdLines(2, "two", "three"), total: 4, footer: "(Showing lines 2-3 of 4. Use offset=4 to continue.)",
		},
		{
			name: "T-06 ReadLimit 2 is the default window", cfg: toolfs.Config{ReadLimit: 2}, content: "a\nb\nc\nd",
			lines: rdLines(1, "a", "b"), total: 4, footer: "(Showing lines 1-2 of 4. Use offset=3 to continue.)",
		},
		{
			name: "T-07 ReadMaxLineLength 4", cfg: toolfs.Config{ReadMaxLineLength: 4}, content: "abcdefgh",
			lines: rdLines(1, "abcd... (line truncated to 4 chars)"), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-08 ReadMaxBytes 9", cfg: toolfs.Config{ReadMaxBytes: 9}, content: "aaaa\nbbbb\ncccc",
			lines: rdLines(1, "aaaa", "bbbb"), total: 3, footer: "(Output capped. Showing lines 1-2. Use offset=3 to continue.)",
		},
		{
			name: "T-30 2000 lines of 100 bytes cap at 506", content: strings.Join(rdRepeatLines(2000, y100), "\n"),
			lines: rdLines(1, rdRepeatLines(506, y100)...), total: 2000,
			footer: "(Output capped. Showing lines 1-506. Use offset=507 to continue.)",
		},
		{
			name: "T-30 with a trailing newline", content: strings.Join(rdRepeatLines(2000, y100), "\n") + "\n",
			lines: rdLines(1, rdRepeatLines(506, y100)...), total: 2000,
			footer: "(Output capped. Showing lines 1-506. Use offset=507 to continue.)",
		},
		{
			name: "T-36 CRLF", content: "one\r\ntwo\r\n",
			lines: rdLines(1, "one", "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-36 CRLF with a final unterminated CR", content: "one\r\ntwo\r",
			lines: rdLines(1, "one", "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-36 only one trailing CR is stripped", content: "a\r\r\nb\rc\n",
			lines: rdLines(1, "a\r", "b\rc"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-36 CR stripped before measuring the line", cfg: toolfs.Config{ReadMaxLineLength: 3}, content: "abc\r\nabcd\r\n",
			lines: rdLines(1, "abc", "abc... (line truncated to 3 chars)"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-37 3000-char line", content: strings.Repeat("x", 3000),
			lines: rdLines(1, trunc(strings.Repeat("x", 2000), 2000)), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-37 3000 two-byte code points are cut at 2000 code points", content: strings.Repeat("é", 3000) + "\n",
			lines: rdLines(1, trunc(strings.Repeat("é", 2000), 2000)), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-43 ReadMaxLineLength 5", cfg: toolfs.Config{ReadMaxLineLength: 5}, content: "abcdefghij",
			lines: rdLines(1, "abcde... (line truncated to 5 chars)"), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-43 emoji counted as one code point each, never split", cfg: toolfs.Config{ReadMaxLineLength: 5},
			content: strings.Repeat("😀", 6) + "\n" + strings.Repeat("😀", 5) + "\n" + "aé😀bcdef",
			lines:   rdLines(1, trunc(strings.Repeat("😀", 5), 5), strings.Repeat("😀", 5), trunc("aé😀bc", 5)),
			total:   3, footer: "(End of file - total 3 lines)",
		},
		{
			name: "T-44 multi-byte lines: equal to the cap is accepted", cfg: toolfs.Config{ReadMaxBytes: 9}, content: "éé\néé\nx",
			lines: rdLines(1, "éé", "éé"), total: 3, footer: "(Output capped. Showing lines 1-2. Use offset=3 to continue.)",
		},
		{
			// "ab... (line truncated to 2 chars)" is 33 bytes.
			name: "T-44 cap counts the truncated text with its suffix", cfg: toolfs.Config{ReadMaxLineLength: 2, ReadMaxBytes: 33},
			content: "abcdef\nx",
			lines:   rdLines(1, "ab... (line truncated to 2 chars)"), total: 2, footer: "(Output capped. Showing lines 1-1. Use offset=2 to continue.)",
		},
		{
			name: "T-44 cap one byte below the truncated text", cfg: toolfs.Config{ReadMaxLineLength: 2, ReadMaxBytes: 32},
			content: "abcdef\nx",
			lines:   rdLines(1), total: 2, footer: "(Output capped. Showing lines 1-0. Use offset=1 to continue.)",
		},
		{
			name: "T-41 T-42 trailing newline adds no line", content: "one\ntwo\n",
			lines: rdLines(1, "one", "two"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-42 empty second line", content: "a\n\n",
			lines: rdLines(1, "a", ""), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "T-49 lines after the window are counted", content: strings.Join(numbered, "\n"), offset: 4, limit: 2,
			lines: rdLines(4, "4", "5"), total: 10, footer: "(Showing lines 4-5 of 10. Use offset=6 to continue.)",
		},
		{
			name: "T-50 first selected line alone exceeds the cap", cfg: toolfs.Config{ReadMaxBytes: 3}, content: "a\nb\ncccc\nd", offset: 3,
			lines: rdLines(3), total: 4, footer: "(Output capped. Showing lines 3-2. Use offset=3 to continue.)",
		},
		{
			name: "T-50 first line of the file exceeds the cap", cfg: toolfs.Config{ReadMaxBytes: 3}, content: "cccc\nd",
			lines: rdLines(1), total: 2, footer: "(Output capped. Showing lines 1-0. Use offset=1 to continue.)",
		},
		{
			name: "T-51 capped footer", cfg: toolfs.Config{ReadMaxBytes: 1}, content: "a\nb",
			lines: rdLines(1, "a"), total: 2, footer: "(Output capped. Showing lines 1-1. Use offset=2 to continue.)",
		},
		{
			name: "T-51 more footer", content: strings.Repeat("l\n", 99), limit: 1,
			lines: rdLines(1, "l"), total: 99, footer: "(Showing lines 1-1 of 99. Use offset=2 to continue.)",
		},
		{
			name: "T-51 end footer says 1 lines", content: "x",
			lines: rdLines(1, "x"), total: 1, footer: "(End of file - total 1 lines)",
		},
		{
			name: "T-51 offset at the last line", content: "a\nb\nc", offset: 3,
			lines: rdLines(3, "c"), total: 3, footer: "(End of file - total 3 lines)",
		},
		{
			name: "BOM is not part of line 1", content: "\uFEFFhello\nworld",
			lines: rdLines(1, "hello", "world"), total: 2, footer: "(End of file - total 2 lines)",
		},
		{
			name: "BOM alone is an empty file", content: "\uFEFF",
			lines: rdLines(1), total: 0, footer: "(End of file - total 0 lines)",
		},
		{
			name: "BOM counts toward neither line length nor bytes", cfg: toolfs.Config{ReadMaxLineLength: 4, ReadMaxBytes: 4},
			content: "\uFEFFabcd\nx",
			lines:   rdLines(1, "abcd"), total: 2, footer: "(Output capped. Showing lines 1-1. Use offset=2 to continue.)",
		},
		{
			name: "BOM after the start is kept", content: "a\n\uFEFFb",
			lines: rdLines(1, "a", "\uFEFFb"), total: 2, footer: "(End of file - total 2 lines)",
		},
	}
	modes := []struct {
		name   string
		stream int64 // ReadStreamMinSize; 0 keeps the case's
	}{
		{name: "whole"},
		{name: "streamed", stream: 1},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				dir := rdDir(t)
				p := rdFile(t, dir, "a.txt", tc.content)
				cfg := tc.cfg
				if mode.stream != 0 {
					cfg.ReadStreamMinSize = mode.stream
				}
				counting := &rdCounting{Service: rdLocal(t, dir)}
				tools := rdTools(t, cfg, counting)
				args := map[string]any{"file_path": "a.txt"}
				wantOffset := 1
				if tc.offset != 0 {
					args["offset"] = tc.offset
					wantOffset = tc.offset
				}
				if tc.limit != 0 {
					args["limit"] = tc.limit
				}
				res := rdCall(t, tools.Read(), session.New("s1", dir), rdArgs(t, args))
				require.False(t, res.IsError, res.Text)
				assert.Empty(t, res.Code)
				assert.Equal(t, rdEnvelope(p, rdBody(tc.lines, tc.footer)), res.Text)
				assert.Equal(t, toolfs.ReadValue{Path: p, Offset: wantOffset, Lines: tc.lines, TotalLines: &tc.total}, res.Value)
				if mode.stream != 0 && len(tc.content) > 0 {
					assert.Equal(t, int64(1), counting.streams.Load(), "streamed")
					assert.Equal(t, int64(0), counting.readTexts.Load())
				}
			})
		}
	}
}

// TestReadValueLinesNeverNil: an empty window is an empty list, not null,
// in the structured value (T-19).
func TestReadValueLinesNeverNil(t *testing.T) {
	dir := rdDir(t)
	rdFile(t, dir, "empty.txt", "")
	res := rdCall(t, rdTools(t, toolfs.Config{}, rdLocal(t, dir)).Read(), nil, `{"file_path":"empty.txt"}`)
	require.False(t, res.IsError, res.Text)
	v, ok := res.Value.(toolfs.ReadValue)
	require.True(t, ok)
	assert.NotNil(t, v.Lines)
	assert.Empty(t, v.Lines)
	assert.NotContains(t, res.Text, "1: ")
}

// TestReadArgumentValidation pins the argument errors and their order
// (T-06, T-20..T-24): no backend call happens before the arguments pass.
func TestReadArgumentValidation(t *testing.T) {
	cases := []struct {
		name string
		cfg  toolfs.Config
		args string
		want string
	}{
		{name: "T-20 offset 0", args: `{"file_path":"a.txt","offset":0}`, want: "offset must be a positive integer"},
		{name: "T-21 offset 1.5", args: `{"file_path":"a.txt","offset":1.5}`, want: "offset must be a positive integer"},
		{name: "T-21 offset -1", args: `{"file_path":"a.txt","offset":-1}`, want: "offset must be a positive integer"},
		{name: "T-21 limit 0", args: `{"file_path":"a.txt","limit":0}`, want: "limit must be a positive integer"},
		{name: "T-21 limit -3", args: `{"file_path":"a.txt","limit":-3}`, want: "limit must be a positive integer"},
		{name: "T-21 limit 2.5", args: `{"file_path":"a.txt","limit":2.5}`, want: "limit must be a positive integer"},
		{name: "T-22 offset as a JSON string", args: `{"file_path":"a.txt","offset":"2"}`, want: "offset must be a positive integer"},
		{name: "T-22 offset NaN as a JSON string", args: `{"file_path":"a.txt","offset":"NaN"}`, want: "offset must be a positive integer"},
		{name: "T-22 offset as a float", args: `{"file_path":"a.txt","offset":2.5}`, want: "offset must be a positive integer"},
		{name: "T-22 offset as a boolean", args: `{"file_path":"a.txt","offset":true}`, want: "offset must be a positive integer"},
		{name: "T-22 limit as a JSON string", args: `{"file_path":"a.txt","limit":"2"}`, want: "limit must be a positive integer"},
		{name: "T-23 limit 99999", args: `{"file_path":"a.txt","limit":99999}`, want: "limit must be less than or equal to 2000"},
		{name: "T-23 limit 2001", args: `{"file_path":"a.txt","limit":2001}`, want: "limit must be less than or equal to 2000"},
		{
			name: "T-06 limit 3 over ReadLimit 2", cfg: toolfs.Config{ReadLimit: 2},
			args: `{"file_path":"a.txt","limit":3}`, want: "limit must be less than or equal to 2",
		},
		{name: "T-24 blank file_path", args: `{"file_path":"   "}`, want: "file_path must be a non-empty string"},
		{name: "T-24 empty file_path", args: `{"file_path":""}`, want: "file_path must be a non-empty string"},
		{name: "T-24 missing file_path", args: `{}`, want: "file_path must be a non-empty string"},
		{name: "T-24 null file_path", args: `{"file_path":null}`, want: "file_path must be a non-empty string"},
		{name: "T-24 numeric file_path", args: `{"file_path":7}`, want: "file_path must be a non-empty string"},
		{name: "T-24 null arguments", args: `null`, want: "file_path must be a non-empty string"},
		{name: "T-24 order file_path before offset", args: `{"file_path":" ","offset":0,"limit":0}`, want: "file_path must be a non-empty string"},
		{name: "T-24 order offset before limit", args: `{"file_path":"a.txt","offset":0,"limit":0}`, want: "offset must be a positive integer"},
		{name: "T-24 order offset before limit cap", args: `{"file_path":"a.txt","offset":1.5,"limit":99999}`, want: "offset must be a positive integer"},
		{name: "T-24 order limit before limit cap", args: `{"file_path":"a.txt","limit":-5}`, want: "limit must be a positive integer"},
		{name: "arguments not an object", args: `[1]`, want: "tool arguments must be a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := rdDir(t)
			rdFile(t, dir, "a.txt", "one\ntwo")
			counting := &rdCounting{Service: rdLocal(t, dir)}
			rec := &rdRecorder{}
			res := rdCall(t, rdTools(t, tc.cfg, counting, rec).Read(), session.New("s1", dir), tc.args)
			assert.True(t, res.IsError)
			assert.Equal(t, "Error: "+tc.want, res.Text)
			assert.EqualValues(t, errcode.InvalidArgument, res.Code, "argument errors carry INVALID_ARGUMENT, no FS_* code")
			assert.Nil(t, res.Value)
			assert.Zero(t, counting.stats.Load()+counting.readTexts.Load()+counting.streams.Load(), "no backend call")
			assert.Empty(t, rec.all())
		})
	}
}

// TestReadArgumentsWholeNumbers: a whole JSON number such as 2.0 or 1e0 is a
// positive integer (spec section 1).
func TestReadArgumentsWholeNumbers(t *testing.T) {
	dir := rdDir(t)
	p := rdFile(t, dir, "a.txt", "one\ntwo\nthree")
	res := rdCall(t, rdTools(t, toolfs.Config{}, rdLocal(t, dir)).Read(), nil,
		`{"file_path":"a.txt","offset":2.0,"limit":1e0}`)
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, rdEnvelope(p, "2: two\n\n(Showing lines 2-2 of 3. Use offset=3 to continue.)"), res.Text)
}

// TestReadLargeIntegerArguments: an integer offset or limit beyond 32 bits is
// still a positive integer (T-21, T-23, T-40): the limit fails the cap with
// its own message and the offset is out of range, INVALID_ARGUMENT (the
// file is there: not FS_NOT_FOUND).
func TestReadLargeIntegerArguments(t *testing.T) {
	cases := []struct {
		name     string
		args     string
		wantText string
		wantCode errcode.Code
	}{
		{
			name:     "T-23 limit 4294967296 fails the cap",
			args:     `{"file_path":"a.txt","limit":4294967296}`,
			wantText: "Error: limit must be less than or equal to 2000",
		},
		{
			name:     "T-40 offset 4294967296 is out of range",
			args:     `{"file_path":"a.txt","offset":4294967296}`,
			wantText: `Error: offset 4294967296 is out of range for "DP" (2 lines); the file is there: use an offset from 1 to 2`,
			wantCode: errcode.InvalidArgument,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := rdDir(t)
			p := rdFile(t, dir, "a.txt", "one\ntwo")
			res := rdCall(t, rdTools(t, toolfs.Config{}, rdLocal(t, dir)).Read(), nil, tc.args)
			assert.True(t, res.IsError)
			assert.Equal(t, strings.ReplaceAll(tc.wantText, "DP", p), res.Text)
			assert.EqualValues(t, rdWantCode(tc.wantCode), res.Code)
		})
	}
}

// TestReadErrorsAndObservations pins the failures of read, their codes and
// what the observers are told (T-25, T-26, T-28, T-31, T-32, T-40), and
// that each read stats exactly once (T-33).
func TestReadErrorsAndObservations(t *testing.T) {
	cases := []struct {
		name     string
		cfg      toolfs.Config
		setup    func(t *testing.T, dir string)
		args     string
		wantText string // with DP for the display path of dir/a.txt
		wantCode fs.Code
		wantObs  fs.ObservationKind // "" = none
	}{
		{
			name: "T-25 missing file records absence", args: `{"file_path":"a.txt"}`,
			wantText: `Error: cannot read "DP": not found`, wantCode: fs.CodeNotFound, wantObs: fs.Absent,
		},
		{
			name:  "T-26 directory records nothing",
			setup: func(t *testing.T, dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "a.txt"), 0o755)) },
			args:  `{"file_path":"a.txt"}`, wantText: `Error: cannot read "DP": not a regular file`, wantCode: fs.CodeNotRegularFile,
		},
		{
			name: "T-26 FIFO is refused without blocking",
			setup: func(t *testing.T, dir string) {
				require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "a.txt"), 0o644))
			},
			args: `{"file_path":"a.txt"}`, wantText: `Error: cannot read "DP": not a regular file`, wantCode: fs.CodeNotRegularFile,
		},
		{
			name:  "T-32 T-40 offset past the end records nothing",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "one\ntwo") },
			args:  `{"file_path":"a.txt","offset":9}`, wantText: `Error: offset 9 is out of range for "DP" (2 lines); the file is there: use an offset from 1 to 2`, wantCode: errcode.InvalidArgument,
		},
		{
			name:  "T-32 offset just past the end",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "one\ntwo\n") },
			args:  `{"file_path":"a.txt","offset":3}`, wantText: `Error: offset 3 is out of range for "DP" (2 lines); the file is there: use an offset from 1 to 2`, wantCode: errcode.InvalidArgument,
		},
		{
			name:  "T-40 empty file at offset 2",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "") },
			args:  `{"file_path":"a.txt","offset":2}`, wantText: `Error: offset 2 is out of range for "DP" (0 lines); the file is there: use offset 1`, wantCode: errcode.InvalidArgument,
		},
		{
			name: "T-32 offset past the end of a streamed file", cfg: toolfs.Config{ReadStreamMinSize: 1},
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "one\ntwo") },
			args:  `{"file_path":"a.txt","offset":3}`, wantText: `Error: offset 3 is out of range for "DP" (2 lines); the file is there: use an offset from 1 to 2`, wantCode: errcode.InvalidArgument,
		},
		{
			name:  "T-28 binary file",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "h\x00i") },
			args:  `{"file_path":"a.txt"}`, wantText: `Error: cannot read "DP": binary file — it cannot be shown as text; a whole-file write may replace it`, wantCode: fs.CodeNotText, wantObs: fs.Present,
		},
		{
			name: "T-28 binary file streamed", cfg: toolfs.Config{ReadStreamMinSize: 1},
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "h\x00i") },
			args:  `{"file_path":"a.txt"}`, wantText: `Error: cannot read "DP": binary file — it cannot be shown as text; a whole-file write may replace it`, wantCode: fs.CodeNotText, wantObs: fs.Present,
		},
		{
			name:  "T-28 invalid UTF-8",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "h\xffi") },
			args:  `{"file_path":"a.txt"}`, wantText: `Error: cannot read "DP": invalid UTF-8 text — it cannot be shown as text; a whole-file write may replace it`, wantCode: fs.CodeNotText, wantObs: fs.Present,
		},
		{
			name: "T-28 invalid UTF-8 streamed", cfg: toolfs.Config{ReadStreamMinSize: 1},
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "h\xffi") },
			args:  `{"file_path":"a.txt"}`, wantText: `Error: cannot read "DP": invalid UTF-8 text — it cannot be shown as text; a whole-file write may replace it`, wantCode: fs.CodeNotText, wantObs: fs.Present,
		},
		{
			name:  "T-31 success records presence",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "one\ntwo") },
			args:  `{"file_path":"a.txt"}`, wantObs: fs.Present,
		},
		{
			name:  "T-31 O-14 windowed read records presence",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "one\ntwo\nthree") },
			args:  `{"file_path":"a.txt","offset":2,"limit":1}`, wantObs: fs.Present,
		},
		{
			name: "T-31 capped read with zero lines records presence", cfg: toolfs.Config{ReadMaxBytes: 1},
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "long line") },
			args:  `{"file_path":"a.txt"}`, wantObs: fs.Present,
		},
		{
			name:  "T-31 empty file at offset 1 records presence",
			setup: func(t *testing.T, dir string) { rdFile(t, dir, "a.txt", "") },
			args:  `{"file_path":"a.txt","offset":1}`, wantObs: fs.Present,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := rdDir(t)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			dp := filepath.Join(dir, "a.txt")
			local := rdLocal(t, dir)
			counting := &rdCounting{Service: local}
			rec := &rdRecorder{}
			sess := session.New("s1", dir)
			res := rdCall(t, rdTools(t, tc.cfg, counting, rec).Read(), sess, tc.args)

			if tc.wantCode != "" {
				assert.True(t, res.IsError)
				assert.Equal(t, strings.ReplaceAll(tc.wantText, "DP", dp), res.Text)
				assert.EqualValues(t, rdWantCode(tc.wantCode), res.Code)
				assert.Nil(t, res.Value)
			} else {
				require.False(t, res.IsError, res.Text)
			}
			assert.Equal(t, int64(1), counting.stats.Load(), "T-33: exactly one stat per read")

			obs := rec.all()
			if tc.wantObs == "" {
				assert.Empty(t, obs)
				return
			}
			require.Len(t, obs, 1)
			assert.Same(t, sess.Owner(), obs[0].Session)
			assert.Equal(t, dp, obs[0].Target.DisplayPath)
			assert.Equal(t, fs.TargetKey(dp), obs[0].Target.Key)
			assert.Equal(t, tc.wantObs, obs[0].Obs.Kind)
			if tc.wantObs == fs.Present {
				target, err := local.Resolve(t.Context(), dp, fs.ResolveOptions{})
				require.NoError(t, err)
				info, err := local.Stat(t.Context(), target)
				require.NoError(t, err)
				assert.Equal(t, info.Version, obs[0].Obs.Version, "the Stat version")
				if tc.wantCode == fs.CodeNotText {
					assert.Zero(t, obs[0].Obs.Content, "issue 13 item 10: seen by version only")
				} else {
					assert.Equal(t, wrFingerprint(t, dp), obs[0].Obs.Content, "spec difference 14: the whole file's content")
				}
			} else {
				assert.Empty(t, obs[0].Obs.Version)
			}
		})
	}
}

// TestReadObservationAuthorizesEdit: the presence a read records is what the
// read-before-write policy gates an edit on (T-31, T-68), and a missing read
// records absence that makes an edit FS_NOT_FOUND (T-76, T-77).
func TestReadObservationAuthorizesEdit(t *testing.T) {
	t.Run("T-31 T-68 windowed read then edit", func(t *testing.T) {
		dir := rdDir(t)
		var b strings.Builder
		for i := 1; i <= 20; i++ {
			b.WriteString("line" + strconv.Itoa(i) + "\n")
		}
		p := rdFile(t, dir, "a.txt", b.String())
		rbw := readbeforewrite.New()
		tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: rdLocal(t, dir), Intents: rbw, Observers: []fs.Observer{rbw}})
		require.NoError(t, err)
		sess := session.New("s1", dir)
		res := rdCall(t, tools.Read(), sess, `{"file_path":"a.txt","offset":1,"limit":1}`)
		require.False(t, res.IsError, res.Text)
		assert.Contains(t, res.Text, "(Showing lines 1-1 of 20")
		res = rdCall(t, tools.Edit(), sess, `{"file_path":"a.txt","old_string":"line12\n","new_string":"twelve\n"}`)
		require.False(t, res.IsError, res.Text)
		assert.Equal(t, "The file "+p+" has been updated successfully.", res.Text)
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Contains(t, string(got), "line11\ntwelve\nline13\n")
	})
	t.Run("T-76 T-77 missing read then edit", func(t *testing.T) {
		dir := rdDir(t)
		rbw := readbeforewrite.New()
		tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: rdLocal(t, dir), Intents: rbw, Observers: []fs.Observer{rbw}})
		require.NoError(t, err)
		sess := session.New("s1", dir)
		res := rdCall(t, tools.Read(), sess, `{"file_path":"gone.txt"}`)
		assert.EqualValues(t, fs.CodeNotFound, res.Code)
		res = rdCall(t, tools.Edit(), sess, `{"file_path":"gone.txt","old_string":"a","new_string":"b"}`)
		assert.True(t, res.IsError)
		assert.EqualValues(t, fs.CodeNotFound, res.Code)
		assert.Equal(t, `Error: cannot edit "`+filepath.Join(dir, "gone.txt")+`": not found`, res.Text)
	})
}

// TestReadBackendRouting pins which backend call reads the file (T-09,
// T-27) and that read stats once while write and edit never stat (T-33).
func TestReadBackendRouting(t *testing.T) {
	cases := []struct {
		name       string
		streamMin  int64
		size       int
		wantStream bool
	}{
		{name: "T-09 ReadStreamMinSize 5 streams a 10-byte file", streamMin: 5, size: 10, wantStream: true},
		{name: "T-27 size equal to the threshold streams", streamMin: 10, size: 10, wantStream: true},
		{name: "T-27 size below the threshold reads whole", streamMin: 11, size: 10, wantStream: false},
		{name: "T-10 zero threshold means 10 MiB: small file reads whole", size: 10, wantStream: false},
		{name: "T-27 default threshold: 10 MiB streams", size: toolfs.DefaultReadStreamMinSize, wantStream: true},
		{name: "T-27 default threshold: 10 MiB minus 1 reads whole", size: toolfs.DefaultReadStreamMinSize - 1, wantStream: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := rdDir(t)
			// Lines of 9 bytes plus a newline, cut to the size.
			content := strings.Repeat("abcdefgh\n", tc.size/9+1)[:tc.size]
			p := rdFile(t, dir, "a.txt", content)
			counting := &rdCounting{Service: rdLocal(t, dir)}
			res := rdCall(t, rdTools(t, toolfs.Config{ReadStreamMinSize: tc.streamMin}, counting).Read(), nil,
				`{"file_path":"a.txt","limit":1}`)
			require.False(t, res.IsError, res.Text)
			prefix := "<path>" + p + "</path>\n<type>file</type>\n<content>\n1: abcdefgh\n\n(Showing lines 1-1 of "
			assert.True(t, strings.HasPrefix(res.Text, prefix), res.Text[:min(200, len(res.Text))])
			assert.Equal(t, int64(1), counting.stats.Load(), "T-33")
			if tc.wantStream {
				assert.Equal(t, int64(1), counting.streams.Load())
				assert.Equal(t, int64(0), counting.readTexts.Load())
			} else {
				assert.Equal(t, int64(0), counting.streams.Load())
				assert.Equal(t, int64(1), counting.readTexts.Load())
			}
		})
	}
	t.Run("T-33 write and edit never stat in the tool layer", func(t *testing.T) {
		dir := rdDir(t)
		counting := &rdCounting{Service: rdLocal(t, dir)}
		tools := rdTools(t, toolfs.Config{}, counting)
		res := rdCall(t, tools.Write(), nil, `{"file_path":"w.txt","content":"hello"}`)
		require.False(t, res.IsError, res.Text)
		res = rdCall(t, tools.Edit(), nil, `{"file_path":"w.txt","old_string":"hello","new_string":"there"}`)
		require.False(t, res.IsError, res.Text)
		assert.Zero(t, counting.stats.Load())
	})
}

// TestReadSessionCwd pins how a relative path resolves (T-12..T-14, T-16):
// against the session's cwd verbatim, else the backend's own; a ".." segment
// in the cwd or the path canonicalizes the cwd first.
func TestReadSessionCwd(t *testing.T) {
	base := rdDir(t)
	backend := filepath.Join(base, "backend")
	sessDir := filepath.Join(base, "session")
	sub := filepath.Join(base, "real", "sub")
	link := filepath.Join(base, "link")
	rdFile(t, backend, "a.txt", "backend")
	rdFile(t, sessDir, "a.txt", "session")
	rdFile(t, sub, "a.txt", "physical-sub")
	rdFile(t, sub, "..foo.txt", "dotdot-name")
	rdFile(t, sub, `..\x.txt`, "backslash")
	rdFile(t, filepath.Join(base, "real"), "a.txt", "physical-real")
	rdFile(t, filepath.Join(base, "real"), "parent.txt", "physical-parent")
	rdFile(t, base, "a.txt", "lexical-base")
	rdFile(t, base, "parent.txt", "lexical-parent")
	require.NoError(t, os.Symlink(sub, link))

	tools := rdTools(t, toolfs.Config{}, rdLocal(t, backend))
	cases := []struct {
		name     string
		sess     *session.Session
		path     string
		wantDP   string
		wantText string
	}{
		{name: "T-12 no session uses the backend cwd", path: "a.txt", wantDP: filepath.Join(backend, "a.txt"), wantText: "backend"},
		{name: "T-12 session without cwd uses the backend cwd", sess: session.New("s", ""), path: "a.txt", wantDP: filepath.Join(backend, "a.txt"), wantText: "backend"},
		{name: "T-13 T-16 session cwd is used verbatim", sess: session.New("s", sessDir), path: "a.txt", wantDP: filepath.Join(sessDir, "a.txt"), wantText: "session"},
		{name: "T-13 symlinked session cwd stays unresolved", sess: session.New("s", link), path: "a.txt", wantDP: filepath.Join(link, "a.txt"), wantText: "physical-sub"},
		{name: "T-13 nested relative path under a symlinked cwd", sess: session.New("s", base), path: "link/a.txt", wantDP: filepath.Join(link, "a.txt"), wantText: "physical-sub"},
		{name: "T-14 dotdot in the path canonicalizes the cwd", sess: session.New("s", link), path: "../parent.txt", wantDP: filepath.Join(base, "real", "parent.txt"), wantText: "physical-parent"},
		{name: "T-14 dotdot in the cwd canonicalizes it", sess: session.New("s", link+"/.."), path: "a.txt", wantDP: filepath.Join(base, "real", "a.txt"), wantText: "physical-real"},
		{name: "T-14 dotdot bounded by a backslash is a segment", sess: session.New("s", link), path: `..\x.txt`, wantDP: filepath.Join(sub, `..\x.txt`), wantText: "backslash"},
		{name: "T-14 a name starting with dotdot is no segment", sess: session.New("s", link), path: "..foo.txt", wantDP: filepath.Join(link, "..foo.txt"), wantText: "dotdot-name"},
		{name: "absolute path ignores the session cwd", sess: session.New("s", link), path: filepath.Join(sessDir, "a.txt"), wantDP: filepath.Join(sessDir, "a.txt"), wantText: "session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := rdCall(t, tools.Read(), tc.sess, rdArgs(t, map[string]any{"file_path": tc.path}))
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, rdEnvelope(tc.wantDP, "1: "+tc.wantText+"\n\n(End of file - total 1 lines)"), res.Text)
		})
	}
}

// TestReadThenEditSessionCwd: read then edit with one session object resolve
// against the session's cwd end to end, never the backend's (T-16, T-17).
func TestReadThenEditSessionCwd(t *testing.T) {
	base := rdDir(t)
	backend, sessDir := filepath.Join(base, "backend"), filepath.Join(base, "session")
	inBackend := rdFile(t, backend, "f.txt", "hello world")
	inSession := rdFile(t, sessDir, "f.txt", "hello world")
	rbw := readbeforewrite.New()
	tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: rdLocal(t, backend), Intents: rbw, Observers: []fs.Observer{rbw}})
	require.NoError(t, err)
	sess := session.New("s1", sessDir)

	res := rdCall(t, tools.Read(), sess, `{"file_path":"f.txt"}`)
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, rdEnvelope(inSession, "1: hello world\n\n(End of file - total 1 lines)"), res.Text)
	res = rdCall(t, tools.Edit(), sess, `{"file_path":"f.txt","old_string":"world","new_string":"there"}`)
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "The file "+inSession+" has been updated successfully.", res.Text)

	got, err := os.ReadFile(inSession)
	require.NoError(t, err)
	assert.Equal(t, "hello there", string(got))
	got, err = os.ReadFile(inBackend)
	require.NoError(t, err)
	assert.Equal(t, "hello world", string(got), "the backend's cwd is untouched")
}

// TestReadCancelled: a cancelled context fails the read with FS_ABORTED and
// records nothing (spec "Translations": AbortSignal -> context).
func TestReadCancelled(t *testing.T) {
	dir := rdDir(t)
	rdFile(t, dir, "a.txt", "one")
	rec := &rdRecorder{}
	tools := rdTools(t, toolfs.Config{}, rdLocal(t, dir), rec)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := tools.Read().Handler(session.NewContext(ctx, session.New("s1", dir)), tool.Call{Arguments: json.RawMessage(`{"file_path":"a.txt"}`)})
	assert.True(t, res.IsError)
	assert.EqualValues(t, fs.CodeAborted, res.Code)
	assert.Empty(t, rec.all())
}

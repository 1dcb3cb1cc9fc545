//go:build linux

package fsbackend_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// utf16Bytes encodes s as UTF-16 with its byte-order mark, independently of
// the backend's codec.
func utf16Bytes(s string, order binary.AppendByteOrder) string {
	units := append([]uint16{0xFEFF}, utf16.Encode([]rune(s))...)
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = order.AppendUint16(b, u)
	}
	return string(b)
}

// mixedLines is issue 13's file: 100 LF lines (5,600 bytes), then 500 CRLF
// lines.
func mixedLines() string {
	var sb strings.Builder
	for i := range 100 {
		fmt.Fprintf(&sb, "%-55s\n", fmt.Sprintf("lf line %03d", i))
	}
	for i := range 500 {
		fmt.Fprintf(&sb, "crlf line %03d\r\n", i)
	}
	return sb.String()
}

// TestWriteTextKeepsConventions: a write over a text file keeps its BOM,
// dominant line ending and encoding (decision 10, superseding Z-4).
func TestWriteTextKeepsConventions(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	cases := []struct {
		name    string
		prior   string // bytes of a.txt before; "" means absent
		content string
		limit   int64
		disk    string
		before  *string
		note    string
	}{
		{name: "issue 13: LF content over a CRLF file stays CRLF", prior: "a\r\nb\r\n", content: "a\nb\n", disk: "a\r\nb\r\n", before: strp("a\nb\n")},
		{name: "issue 13: content without BOM over a BOM file keeps the BOM", prior: "\ufeffold\n", content: "new\n", disk: "\ufeffnew\n", before: strp("old\n")},
		{
			name: "explicit CRLF content over an LF file is taken as given and said", prior: "a\nb\n", content: "a\r\nb\r\n",
			disk: "a\r\nb\r\n", before: strp("a\nb\n"), note: "Line endings converted from LF to CRLF as the content gives them.",
		},
		{name: "the dominant ending counts the whole file", prior: mixedLines(), content: "x\ny\n", disk: "x\r\ny\r\n", before: strp(strings.ReplaceAll(mixedLines(), "\r\n", "\n"))},
		{name: "beyond the diff limit the conventions still apply", prior: "a\r\nb\r\n", content: "c\n", limit: 4, disk: "c\r\n"},
		{name: "UTF-16LE stays UTF-16LE with its BOM", prior: utf16Bytes("old\n", le), content: "new é\n", disk: utf16Bytes("new é\n", le), before: strp("old\n")},
		{name: "UTF-16BE CRLF stays UTF-16BE CRLF", prior: utf16Bytes("a\r\n", be), content: "x\ny😀\n", disk: utf16Bytes("x\r\ny😀\r\n", be), before: strp("a\n")},
		{name: "a Latin-1 file is replaced by the content as given", prior: "caf\xe9\r\n", content: "café\n", disk: "café\n"},
		{name: "a new file gets the content as given", content: "a\nb", disk: "a\nb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{DiffBasisMaxBytes: tc.limit})
			if tc.prior != "" {
				fixture.Build(t, dir, "a.txt: "+tc.prior)
			}
			out, err := f.WriteText(context.Background(), resolve(t, f, "a.txt"), tc.content, fs.WriteOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.disk, readFile(t, filepath.Join(dir, "a.txt")))
			assert.Equal(t, tc.before, out.Before)
			assert.Equal(t, strings.ReplaceAll(tc.content, "\r\n", "\n"), out.After)
			assert.Equal(t, tc.note, out.Note)
		})
	}
}

// TestEditTextKeepsConventions: an edit changes no byte outside what it
// replaces, in UTF-8 and UTF-16 (decision 10, superseding L-114).
func TestEditTextKeepsConventions(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	mixed := mixedLines()
	cases := []struct {
		name     string
		prior    string
		old, new string
		disk     string
		after    string
	}{
		{name: "issue 13: the untouched CRLF line of an LF file is kept", prior: "alpha\nbeta\r\ngamma\n", old: "alpha", new: "ALPHA", disk: "ALPHA\nbeta\r\ngamma\n", after: "ALPHA\nbeta\ngamma\n"},
		{
			name: "issue 13: a one-line edit on line 1 keeps the 500 CRLF lines", prior: mixed, old: "lf line 000 ", new: "LF LINE 000 ",
			disk: "LF LINE 000 " + mixed[len("lf line 000 "):], after: strings.ReplaceAll("LF LINE 000 "+mixed[len("lf line 000 "):], "\r\n", "\n"),
		},
		{name: "UTF-16LE is edited and written back as UTF-16LE", prior: utf16Bytes("x = 1\n", le), old: "1", new: "ü", disk: utf16Bytes("x = ü\n", le), after: "x = ü\n"},
		{name: "UTF-16BE CRLF gets CRLF on added lines", prior: utf16Bytes("a\r\nb\r\n", be), old: "a", new: "a1\na2", disk: utf16Bytes("a1\r\na2\r\nb\r\n", be), after: "a1\na2\nb\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, "a.txt: "+tc.prior)
			out, err := f.EditText(context.Background(), resolve(t, f, "a.txt"), fs.EditRequest{OldString: tc.old, NewString: tc.new})
			require.NoError(t, err)
			assert.Equal(t, tc.disk, readFile(t, filepath.Join(dir, "a.txt")))
			assert.Equal(t, tc.after, out.After)
			assert.Empty(t, out.Note)
		})
	}
}

func TestEditTextRefusals(t *testing.T) {
	cases := []struct {
		name    string
		prior   string
		old     string
		code    fs.Code
		message string
	}{
		{
			name: "issue 13: a precomposed old_string in a decomposed file gets a hint", prior: "cafe\u0301 menu\n", old: "café menu",
			code: fs.CodeEditNotFound,
			message: `old_string was not found in "<dp>"; line 1 matches only under Unicode normalization (NFC): the file has decomposed ` +
				`characters (a letter followed by a combining mark) where old_string has precomposed ones; old_string must match the file exactly, so nothing was changed`,
		},
		{
			name: "trailing whitespace names the line", prior: "a\nb \nc\n", old: "b\nc", code: fs.CodeEditNotFound,
			message: `old_string was not found in "<dp>"; line 2 matches only when trailing whitespace is ignored; old_string must match the file exactly, so nothing was changed`,
		},
		{name: "a plain miss has no hint", prior: "abc", old: "xyz", code: fs.CodeEditNotFound, message: `old_string was not found in "<dp>"`},
		{name: "invalid UTF-16 is FS_NOT_TEXT", prior: "\xff\xfe=\xd8x\x00", old: "x", code: fs.CodeNotText, message: `cannot edit "<dp>": invalid UTF-16 text`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, "a.txt: "+tc.prior)
			tg := resolve(t, f, "a.txt")
			_, err := f.EditText(context.Background(), tg, fs.EditRequest{OldString: tc.old, NewString: "new"})
			require.Error(t, err)
			assert.EqualValues(t, tc.code, fs.CodeOf(err))
			assert.Equal(t, expand(tc.message, tg), err.Error())
			assert.Equal(t, tc.prior, readFile(t, filepath.Join(dir, "a.txt")), "nothing changed")
		})
	}
}

func TestReadTextUTF16(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "le.txt: "+utf16Bytes("héllo\r\n😀", binary.LittleEndian), "latin1.txt: caf\xe9")
	text, err := f.ReadText(context.Background(), resolve(t, f, "le.txt"))
	require.NoError(t, err)
	assert.Equal(t, "\ufeffhéllo\r\n😀", text)
	var streamed strings.Builder
	for chunk, err := range f.StreamText(context.Background(), resolve(t, f, "le.txt")) {
		require.NoError(t, err)
		streamed.WriteString(chunk)
	}
	assert.Equal(t, text, streamed.String())

	_, err = f.ReadText(context.Background(), resolve(t, f, "latin1.txt"))
	assert.EqualValues(t, fs.CodeNotText, fs.CodeOf(err))
}

package textfile_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/textfile"
)

func TestApplyEdit(t *testing.T) {
	tests := []struct {
		name       string
		raw        string
		old, new   string
		replaceAll bool
		want       textfile.Edit
	}{
		{
			name: "single replacement in LF text",
			raw:  "hello world", old: "world", new: "there",
			want: textfile.Edit{
				Before: "hello world", After: "hello there", Output: "hello there",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "CRLF file keeps CRLF and diffs are LF",
			raw:  "a\r\nOLD\r\nb\r\n", old: "OLD", new: "NEW",
			want: textfile.Edit{
				Before: "a\nOLD\nb\n", After: "a\nNEW\nb\n", Output: "a\r\nNEW\r\nb\r\n",
				Replacements: 1, Style: textfile.CRLF,
			},
		},
		{
			name: "replaceAll replaces every occurrence",
			raw:  "a a a", old: "a", new: "b", replaceAll: true,
			want: textfile.Edit{
				Before: "a a a", After: "b b b", Output: "b b b",
				Replacements: 3, Style: textfile.LF,
			},
		},
		{
			name: "replaceAll with a single occurrence",
			raw:  "x y", old: "y", new: "z", replaceAll: true,
			want: textfile.Edit{
				Before: "x y", After: "x z", Output: "x z",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "CRLF old and new match an LF-normalized multi-line literal",
			raw:  "zero\none\ntwo\nthree\n", old: "one\r\ntwo", new: "uno\r\ndos",
			want: textfile.Edit{
				Before: "zero\none\ntwo\nthree\n", After: "zero\nuno\ndos\nthree\n",
				Output: "zero\nuno\ndos\nthree\n", Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "LF old and new match in a CRLF file",
			raw:  "zero\r\none\r\ntwo\r\n", old: "one\ntwo", new: "1\n2\n3",
			want: textfile.Edit{
				Before: "zero\none\ntwo\n", After: "zero\n1\n2\n3\n",
				Output: "zero\r\n1\r\n2\r\n3\r\n", Replacements: 1, Style: textfile.CRLF,
			},
		},
		{
			name: "occurrences are counted without overlap",
			raw:  "aaaa", old: "aa", new: "b", replaceAll: true,
			want: textfile.Edit{
				Before: "aaaa", After: "bb", Output: "bb",
				Replacements: 2, Style: textfile.LF,
			},
		},
		{
			name: "BOM is kept in Output and absent from diffs",
			raw:  "\uFEFFx=1\n", old: "x", new: "y",
			want: textfile.Edit{
				Before: "x=1\n", After: "y=1\n", Output: "\uFEFFy=1\n",
				Replacements: 1, Style: textfile.LF, HasBOM: true,
			},
		},
		{
			name: "BOM and CRLF are both kept",
			raw:  "\uFEFFa\r\nb\r\n", old: "b", new: "c",
			want: textfile.Edit{
				Before: "a\nb\n", After: "a\nc\n", Output: "\uFEFFa\r\nc\r\n",
				Replacements: 1, Style: textfile.CRLF, HasBOM: true,
			},
		},
		{
			name: "empty new string deletes the match",
			raw:  "keep\ndrop me\nkeep\n", old: "drop me\n", new: "",
			want: textfile.Edit{
				Before: "keep\ndrop me\nkeep\n", After: "keep\nkeep\n", Output: "keep\nkeep\n",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "mixed file stays mixed: the replaced line keeps its LF",
			raw:  "a\r\nb\r\nc\n", old: "c", new: "C",
			want: textfile.Edit{
				Before: "a\nb\nc\n", After: "a\nb\nC\n", Output: "a\r\nb\r\nC\n",
				Replacements: 1, Style: textfile.CRLF,
			},
		},
		{
			name: "issue 13: untouched CRLF line of an LF file is kept",
			raw:  "alpha\nbeta\r\ngamma\n", old: "alpha", new: "ALPHA",
			want: textfile.Edit{
				Before: "alpha\nbeta\ngamma\n", After: "ALPHA\nbeta\ngamma\n", Output: "ALPHA\nbeta\r\ngamma\n",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "replaced lines take the endings of the lines they replace",
			raw:  "a\nb\r\nc\nd\r\n", old: "b\nc\n", new: "B\nC\n",
			want: textfile.Edit{
				Before: "a\nb\nc\nd\n", After: "a\nB\nC\nd\n", Output: "a\nB\r\nC\nd\r\n",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "added lines take the dominant ending",
			raw:  "x\r\ny\r\nz\n", old: "y", new: "y1\ny2\ny3",
			want: textfile.Edit{
				Before: "x\ny\nz\n", After: "x\ny1\ny2\ny3\nz\n", Output: "x\r\ny1\r\ny2\r\ny3\r\nz\n",
				Replacements: 1, Style: textfile.CRLF,
			},
		},
		{
			name: "removed lines keep the first endings of the span",
			raw:  "a\r\nb\nc\r\n", old: "a\nb\n", new: "ab\n",
			want: textfile.Edit{
				Before: "a\nb\nc\n", After: "ab\nc\n", Output: "ab\r\nc\r\n",
				Replacements: 1, Style: textfile.CRLF,
			},
		},
		{
			name: "a CR run before LF is one ending, kept byte for byte",
			raw:  "a\r\r\nb\n", old: "a\n", new: "A\n",
			want: textfile.Edit{
				Before: "a\nb\n", After: "A\nb\n", Output: "A\r\r\nb\n",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "new text putting U+FEFF first adds a byte-order mark and says so",
			raw:  "a\n", old: "a", new: "\uFEFFa",
			want: textfile.Edit{
				Before: "a\n", After: "a\n", Output: "\uFEFFa\n",
				Replacements: 1, Style: textfile.LF, Note: "Byte-order mark added.",
			},
		},
		{
			name: "CR left next to LF by a deletion reads back as a line ending",
			raw:  "a\rX\nb", old: "X", new: "",
			want: textfile.Edit{
				Before: "a\rX\nb", After: "a\nb", Output: "a\r\nb",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "new string ending in CR before LF in a CRLF file",
			raw:  "X\r\ny\r\n", old: "X", new: "Z\r",
			want: textfile.Edit{
				Before: "X\ny\n", After: "Z\ny\n", Output: "Z\r\r\ny\r\n",
				Replacements: 1, Style: textfile.CRLF,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := textfile.ApplyEdit(tt.raw, tt.old, tt.new, tt.replaceAll)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestApplyEditErrors(t *testing.T) {
	tests := []struct {
		name       string
		raw        string
		old, new   string
		replaceAll bool
		wantErr    error
		wantCount  int // for *AmbiguousError
	}{
		{name: "missing old string is not found", raw: "a a a", old: "z", new: "y", wantErr: textfile.ErrNotFound},
		{name: "empty old string is rejected", raw: "abc", old: "", new: "x", wantErr: textfile.ErrEmptyOld},
		{name: "empty old string is rejected even with replaceAll", raw: "abc", old: "", new: "x", replaceAll: true, wantErr: textfile.ErrEmptyOld},
		{name: "multiple matches without replaceAll are ambiguous", raw: "a a a", old: "a", new: "b", wantCount: 3},
		{name: "not found in empty file", raw: "", old: "a", new: "b", wantErr: textfile.ErrNotFound},
		{name: "BOM is not matchable text", raw: "\uFEFFx", old: "\uFEFFx", new: "y", wantErr: textfile.ErrNotFound},
		{name: "lone CR in old does not match a CRLF line ending", raw: "a\r\nb", old: "a\r", new: "c", wantErr: textfile.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := textfile.ApplyEdit(tt.raw, tt.old, tt.new, tt.replaceAll)
			require.Error(t, err)
			assert.Equal(t, textfile.Edit{}, got)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			var amb *textfile.AmbiguousError
			require.True(t, errors.As(err, &amb), "want *AmbiguousError, got %T", err)
			assert.Equal(t, tt.wantCount, amb.Count)
			assert.EqualError(t, err, "old_string matched 3 times")
		})
	}
}

// TestApplyEditLargeMixedFile is issue 13's input: 100 LF lines (5,600
// bytes), then 500 CRLF lines; a one-line edit on line 1 keeps all 500 CRLF.
func TestApplyEditLargeMixedFile(t *testing.T) {
	var sb strings.Builder
	for i := range 100 {
		fmt.Fprintf(&sb, "%-55s\n", fmt.Sprintf("lf line %03d", i))
	}
	require.Equal(t, 5600, sb.Len())
	for i := range 500 {
		fmt.Fprintf(&sb, "crlf line %03d\r\n", i)
	}
	raw := sb.String()
	got, err := textfile.ApplyEdit(raw, "lf line 000 ", "LF LINE 000 ", false)
	require.NoError(t, err)
	assert.Equal(t, "LF LINE 000 "+raw[len("lf line 000 "):], got.Output)
	assert.Equal(t, 500, strings.Count(got.Output, "\r\n"))
	assert.Equal(t, textfile.CRLF, got.Style, "detection covers the whole file")
}

func TestApplyEditNotFoundHints(t *testing.T) {
	tests := []struct {
		name     string
		raw, old string
		wantLine int
		wantHint string // substring of the hint
	}{
		{"issue 13: decomposed file, precomposed old_string", "cafe\u0301 menu\n", "café menu", 1, "Unicode normalization (NFC): the file has decomposed"},
		{"precomposed file, decomposed old_string", "x\ncafé\n", "cafe\u0301", 2, "old_string has decomposed"},
		{"trailing whitespace", "a\nb  \nc\n", "b\nc", 2, "trailing whitespace"},
		{"indentation", "func f() {\n\treturn 1\n}\n", "  return 1\n}", 2, "indentation"},
		{"lone CR line breaks", "one\rtwo\rthree", "two\nthree", 1, "lone carriage return"},
		{"typographic quotes", "a\nsay \u201chi\u201d \u2014 ok\n", `say "hi" - ok`, 2, "typographic quotes"},
		{"no near match has no hint", "abc\n", "xyz", 0, ""},
		{"a near match twice has no hint", "b \nb \n", "b\n", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := textfile.ApplyEdit(tt.raw, tt.old, "new", false)
			require.ErrorIs(t, err, textfile.ErrNotFound)
			var nf *textfile.NotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, tt.wantLine, nf.Line)
			if tt.wantHint == "" {
				assert.Empty(t, nf.Hint())
				assert.EqualError(t, err, "old_string was not found")
				return
			}
			assert.Contains(t, nf.Hint(), tt.wantHint)
			assert.Contains(t, err.Error(), fmt.Sprintf("line %d matches only", tt.wantLine))
		})
	}
}

// BenchmarkApplyEdit replaces one line in the middle of a 100 KiB CRLF file.
func BenchmarkApplyEdit(b *testing.B) {
	const size = 100 << 10
	var sb strings.Builder
	for i := 0; sb.Len() < size; i++ {
		if i == 1000 {
			sb.WriteString("the unique target line\r\n")
			continue
		}
		sb.WriteString("an ordinary line of source text, nothing to see\r\n")
	}
	raw := sb.String()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := textfile.ApplyEdit(raw, "the unique target line\n", "a replaced line\n", false); err != nil {
			b.Fatal(err)
		}
	}
}

package textfile_test

import (
	"errors"
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
			name: "mixed file is rewritten in its dominant style",
			raw:  "a\r\nb\r\nc\n", old: "c", new: "C",
			want: textfile.Edit{
				Before: "a\nb\nc\n", After: "a\nb\nC\n", Output: "a\r\nb\r\nC\r\n",
				Replacements: 1, Style: textfile.CRLF,
			},
		},
		{
			name: "CR left next to LF by a deletion reads back as a line ending",
			raw:  "a\rX\nb", old: "X", new: "",
			want: textfile.Edit{
				Before: "a\rX\nb", After: "a\nb", Output: "a\nb",
				Replacements: 1, Style: textfile.LF,
			},
		},
		{
			name: "new string ending in CR before LF in a CRLF file",
			raw:  "X\r\ny\r\n", old: "X", new: "Z\r",
			want: textfile.Edit{
				Before: "X\ny\n", After: "Z\ny\n", Output: "Z\r\ny\r\n",
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

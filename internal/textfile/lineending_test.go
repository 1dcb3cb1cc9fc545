package textfile_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/internal/textfile"
)

func TestSplitBOM(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantBOM bool
		want    string
	}{
		{"no BOM is returned unchanged", "x=1\n", false, "x=1\n"},
		{"leading BOM is stripped", "\uFEFFx=1\n", true, "x=1\n"},
		{"only one BOM is stripped", "\uFEFF\uFEFFx", true, "\uFEFFx"},
		{"BOM not at the start is kept", "x\uFEFF", false, "x\uFEFF"},
		{"empty string has no BOM", "", false, ""},
		{"BOM alone leaves empty text", "\uFEFF", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hasBOM, rest := textfile.SplitBOM(tt.in)
			assert.Equal(t, tt.wantBOM, hasBOM)
			assert.Equal(t, tt.want, rest)
		})
	}
}

func TestStyleString(t *testing.T) {
	assert.Equal(t, "LF", textfile.LF.String())
	assert.Equal(t, "CRLF", textfile.CRLF.String())
	assert.Equal(t, "Style(7)", textfile.Style(7).String())
}

func TestDetectStyle(t *testing.T) {
	// 4096 three-byte runes no longer bound the detection (L-114 superseded).
	longPrefix := strings.Repeat("€", 4096)
	tests := []struct {
		name string
		in   string
		want textfile.Style
	}{
		{"all CRLF is CRLF", "a\r\nb\r\nc\r\n", textfile.CRLF},
		{"all LF is LF", "a\nb\nc\n", textfile.LF},
		{"mixed with more LF is LF", "a\r\nb\nc\nd\n", textfile.LF},
		{"mixed with more CRLF is CRLF", "a\r\nb\r\nc\n", textfile.CRLF},
		{"tie is LF", "a\r\nb\n", textfile.LF},
		{"no newline is LF", "abc", textfile.LF},
		{"empty is LF", "", textfile.LF},
		{"lone CR is ignored", "a\rb\rc\r\nd\n", textfile.LF},
		{"only lone CR is LF", "a\rb\rc\r", textfile.LF},
		{"CR run before LF counts as one CRLF", "a\r\r\nb\r\nc\n", textfile.CRLF},
		{"CRLFs beyond the first 4096 code points are seen", longPrefix + "\r\n\r\n\r\n", textfile.CRLF},
		{"issue 13: 100 LF lines then 500 CRLF lines is CRLF", strings.Repeat(strings.Repeat("x", 55)+"\n", 100) + strings.Repeat("y\r\n", 500), textfile.CRLF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, textfile.DetectStyle(tt.in))
		})
	}
}

func TestEndingsAcrossPieces(t *testing.T) {
	var e textfile.Endings
	for _, piece := range []string{"a\r", "\nb\r", "\r", "\n", "c\n", "", "d\r"} {
		e.Add(piece)
	}
	assert.Equal(t, 2, e.CRLF)
	assert.Equal(t, 1, e.LF)
	assert.Equal(t, textfile.CRLF, e.Style())
}

func TestConformWrite(t *testing.T) {
	lf := detect("a\nb\n")
	crlf := detect("a\r\nb\r\n")
	bom := detect("\uFEFFold\n")
	tests := []struct {
		name     string
		content  string
		prior    textfile.Conventions
		want     string
		wantNote string
	}{
		{"issue 13: LF content over a CRLF file keeps CRLF", "a\nb\n", crlf, "a\r\nb\r\n", ""},
		{"issue 13: content without BOM over a BOM file keeps the BOM", "new\n", bom, "\uFEFFnew\n", ""},
		{"LF content over an LF file is as given", "x\ny", lf, "x\ny", ""},
		{"explicit CRLF over an LF file is taken as given and said", "x\r\ny\r\n", lf, "x\r\ny\r\n", "Line endings converted from LF to CRLF as the content gives them."},
		{"explicit CRLF over a CRLF file is as given", "x\r\n", crlf, "x\r\n", ""},
		{"a lone CR makes the content explicit", "x\ry\n", crlf, "x\ry\n", "Line endings converted from CRLF to LF as the content gives them."},
		{"content with a BOM over a file without one adds it and says so", "\uFEFFx\n", lf, "\uFEFFx\n", "Byte-order mark added."},
		{"content with a BOM over a BOM file keeps one", "\uFEFFx", bom, "\uFEFFx", ""},
		{"content without line breaks converts nothing", "x", crlf, "x", ""},
		{"an empty prior file has no endings to keep", "x\r\n", detect(""), "x\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := textfile.ConformWrite(tt.content, tt.prior)
			assert.Equal(t, tt.want, got.Output)
			assert.Equal(t, tt.wantNote, got.Note)
		})
	}
}

func TestNormalizeLF(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"CRLF becomes LF", "a\r\nb\r\nc\r\n", "a\nb\nc\n"},
		{"LF is unchanged", "a\nb\n", "a\nb\n"},
		{"mixed becomes LF", "a\r\nb\nc\r\n", "a\nb\nc\n"},
		{"lone CR is untouched", "a\rb\r", "a\rb\r"},
		{"lone CR next to CRLF is untouched", "a\r\r\nb\n\r", "a\nb\n\r"},
		{"CR run before LF collapses to one LF", "a\r\r\r\nb", "a\nb"},
		{"empty stays empty", "", ""},
		{"bare CRLF", "\r\n", "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := textfile.NormalizeLF(tt.in)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, got, textfile.NormalizeLF(got), "idempotent")
		})
	}
}

func TestNormalizeLFDoesNotAllocateWithoutCRLF(t *testing.T) {
	s := strings.Repeat("line\r\n", 1) + strings.Repeat("plain line\n", 100)
	s = s[6:] // no CRLF left
	allocs := testing.AllocsPerRun(100, func() { _ = textfile.NormalizeLF(s) })
	assert.Zero(t, allocs)
}

func TestRestore(t *testing.T) {
	tests := []struct {
		name       string
		normalized string
		style      textfile.Style
		want       string
	}{
		{"LF leaves text unchanged", "a\nb\n", textfile.LF, "a\nb\n"},
		{"CRLF converts every LF", "a\nb\n", textfile.CRLF, "a\r\nb\r\n"},
		{"CRLF keeps lone CR", "a\rb\n", textfile.CRLF, "a\rb\r\n"},
		{"CRLF of text without newline is unchanged", "abc", textfile.CRLF, "abc"},
		{"unknown style acts as LF", "a\n", textfile.Style(9), "a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, textfile.Restore(tt.normalized, tt.style))
		})
	}
}

func TestRestoreCRLFOfMixedFileIsUniform(t *testing.T) {
	mixed := "a\r\nb\nc\r\nd\ne\r\n"
	got := textfile.Restore(textfile.NormalizeLF(mixed), textfile.CRLF)
	assert.Equal(t, "a\r\nb\r\nc\r\nd\r\ne\r\n", got)
	assert.NotContains(t, got, "\r\r\n")
	assert.Equal(t, strings.Count(got, "\n"), strings.Count(got, "\r\n"))
}

// detect returns the UTF-8 conventions of a whole text, as a write learns
// them from the file it replaces.
func detect(text string) textfile.Conventions {
	var c textfile.Conventions
	c.BOM, text = textfile.SplitBOM(text)
	c.Endings.Add(text)
	return c
}

package textfile_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/textfile"
)

// maxFuzzInput caps the bytes of each value a fuzz target accepts. The fuzz
// engine minimizes every new interesting input by trying roughly n²/2
// candidates, so larger inputs stall its workers for up to
// -fuzzminimizetime each; long-text behavior is reached by padding inside
// the targets instead.
const maxFuzzInput = 256

func FuzzApplyEdit(f *testing.F) {
	seeds := []struct {
		raw, old, new string
		all           bool
	}{
		{"hello world", "world", "there", false},
		{"a\r\nOLD\r\nb\r\n", "OLD", "NEW", false},
		{"a a a", "z", "y", false},
		{"a a a", "a", "b", false},
		{"a a a", "a", "b", true},
		{"abc", "", "x", false},
		{"zero\none\ntwo\nthree\n", "one\r\ntwo", "uno\r\ndos", false},
		{"aaaa", "aa", "b", true},
		{"\uFEFFx=1\n", "x", "y", false},
		{"keep\ndrop me\nkeep\n", "drop me\n", "", false},
		{"a\rX\nb", "X", "", false},
		{"X\r\ny\r\n", "X", "Z\r", false},
		{"a\r\r\nb\r\n", "b", "c", false},
		{"\uFEFF\uFEFFx", "x", "\uFEFF", false},
	}
	for _, s := range seeds {
		f.Add(s.raw, s.old, s.new, s.all)
	}
	f.Fuzz(func(t *testing.T, raw, oldString, newString string, all bool) {
		if len(raw) > maxFuzzInput || len(oldString) > maxFuzzInput || len(newString) > maxFuzzInput {
			t.Skip("input too large")
		}
		if !utf8.ValidString(raw) || !utf8.ValidString(oldString) || !utf8.ValidString(newString) {
			t.Skip("ApplyEdit takes already-validated text")
		}
		hadBOM, rest := textfile.SplitBOM(raw)
		before := textfile.NormalizeLF(rest)
		oldNorm := textfile.NormalizeLF(oldString)
		newNorm := textfile.NormalizeLF(newString)

		e, err := textfile.ApplyEdit(raw, oldString, newString, all)
		var amb *textfile.AmbiguousError
		switch {
		case err == nil:
		case errors.Is(err, textfile.ErrEmptyOld):
			require.Empty(t, oldString)
			return
		case errors.Is(err, textfile.ErrNotFound):
			require.NotEmpty(t, oldString)
			require.Zero(t, strings.Count(before, oldNorm))
			return
		case errors.As(err, &amb):
			require.False(t, all)
			require.Greater(t, amb.Count, 1)
			require.Equal(t, strings.Count(before, oldNorm), amb.Count)
			return
		default:
			t.Fatalf("unexpected error %v", err)
		}

		require.Equal(t, hadBOM, e.HasBOM, "HasBOM reflects the input")
		if hadBOM {
			require.True(t, strings.HasPrefix(e.Output, textfile.BOM), "BOM preserved")
		}
		_, body := textfile.SplitBOM(e.Output)
		require.Equal(t, e.After, textfile.NormalizeLF(body), "After is what a re-read shows")
		require.Equal(t, before, e.Before)
		require.NotContains(t, e.After, "\r\n")
		require.Equal(t, textfile.DetectStyle(rest), e.Style)

		// An edit whose strings hold no line break changes only the
		// matched bytes: every other byte, line endings included, is kept.
		if !strings.ContainsAny(oldNorm+newNorm, "\r\n") {
			prefix := ""
			if hadBOM {
				prefix = textfile.BOM
			}
			require.Equal(t, prefix+strings.Replace(rest, oldNorm, newNorm, e.Replacements), e.Output)
		}
		// A file and strings without "\r" stay without "\r" unless the file
		// is CRLF-dominant (impossible then); a pure CRLF file without lone
		// "\r" stays pure CRLF.
		if !strings.Contains(raw+newNorm, "\r") {
			require.NotContains(t, e.Output, "\r")
		}
		if !strings.Contains(strings.ReplaceAll(raw+newNorm, "\r\n", ""), "\r") &&
			strings.Count(rest, "\n") == strings.Count(rest, "\r\n") && strings.Contains(rest, "\n") {
			require.Equal(t, strings.Count(body, "\n"), strings.Count(body, "\r\n"), "pure CRLF stays pure")
		}
		if !hadBOM && e.Note != "" {
			require.True(t, strings.HasPrefix(e.Output, textfile.BOM))
		}

		require.GreaterOrEqual(t, e.Replacements, 1)
		if !all {
			require.Equal(t, 1, e.Replacements)
		}
		require.Equal(t, strings.Count(before, oldNorm), e.Replacements)
		// Without any "\r" the edit is a plain replacement.
		if !strings.Contains(before+oldNorm+newNorm, "\r") {
			require.Equal(t, strings.ReplaceAll(before, oldNorm, newNorm), e.After)
		}
	})
}

// FuzzConformWrite checks a write over a file: the text is the content's,
// the BOM is kept or added, never dropped, and content without "\r" takes
// the file's dominant ending.
func FuzzConformWrite(f *testing.F) {
	for _, s := range [][2]string{
		{"a\r\nb\r\n", "a\nb\n"},
		{"\uFEFFold\n", "new\n"},
		{"a\n", "x\r\ny"},
		{"", "x"},
		{"\uFEFF", "\uFEFFx"},
		{"a\r\r\nb\n", "c\rd\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, prior, content string) {
		if len(prior) > maxFuzzInput || len(content) > maxFuzzInput {
			t.Skip("input too large")
		}
		conv := detect(prior)
		w := textfile.ConformWrite(content, conv)
		hasBOM, body := textfile.SplitBOM(w.Output)
		contentBOM, contentBody := textfile.SplitBOM(content)
		require.Equal(t, conv.BOM || contentBOM, hasBOM)
		require.Equal(t, textfile.NormalizeLF(contentBody), textfile.NormalizeLF(body), "the text is the content's")
		switch {
		case strings.Contains(contentBody, "\r"):
			require.Equal(t, contentBody, body, "explicit CRs are taken as given")
		case conv.Endings.Style() == textfile.CRLF:
			require.Equal(t, strings.Count(body, "\n"), strings.Count(body, "\r\n"))
		default:
			require.Equal(t, contentBody, body)
		}
		if !contentBOM && strings.Contains(w.Note, "mark") {
			t.Fatalf("a BOM note without a BOM in the content: %q", w.Note)
		}
	})
}

func FuzzLineEndings(f *testing.F) {
	for _, s := range []string{
		"a\r\nb\r\nc\r\n", "a\r\nb\nc\nd\n", "a\r\nb\n", "a\rb\rc\r\nd\n",
		"a\r\r\nb", "\r\r\r\n\n\r", "", "\uFEFFx=1\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			t.Skip("input too large")
		}
		n := textfile.NormalizeLF(s)
		require.Equal(t, n, textfile.NormalizeLF(n), "NormalizeLF is idempotent")
		require.NotContains(t, n, "\r\n")
		require.LessOrEqual(t, len(n), len(s))
		require.Equal(t, n, textfile.Restore(n, textfile.LF))
		crlf := textfile.Restore(n, textfile.CRLF)
		require.NotContains(t, crlf, "\r\r\n")
		require.Equal(t, n, textfile.NormalizeLF(crlf), "CRLF restore round-trips")
		if !strings.Contains(s, "\r\n") {
			require.Equal(t, s, n)
		}
		st := textfile.DetectStyle(s)
		require.Contains(t, []textfile.Style{textfile.LF, textfile.CRLF}, st)
		if !strings.Contains(s, "\r\n") {
			require.Equal(t, textfile.LF, st)
		}
		// Counting in two pieces agrees with counting the whole.
		var whole, split textfile.Endings
		whole.Add(s)
		cut := len(s) / 2
		split.Add(s[:cut])
		split.Add(s[cut:])
		require.Equal(t, whole, split)
		require.Equal(t, st, whole.Style())
		require.Equal(t, strings.Count(n, "\n"), whole.CRLF+whole.LF)
	})
}

// padFlag in FuzzDecoder's split argument prepends padLen bytes to the input
// so that the end of the NUL sample falls inside the fuzzed bytes without a
// multi-kilobyte corpus entry (see maxFuzzInput).
const (
	padFlag = 0x8000
	padLen  = textfile.BinarySampleBytes - 8
)

func FuzzDecoder(f *testing.F) {
	f.Add([]byte("a€b"), uint16(2))
	f.Add([]byte("x😀y"), uint16(3))
	f.Add([]byte{0x68, 0x00, 0x69}, uint16(1))
	f.Add([]byte{0x68, 0xFF, 0x69}, uint16(1))
	f.Add([]byte{'a', 0xF0, 0x9F}, uint16(2))
	f.Add([]byte{0xFF, 'x', 0x00}, uint16(1))
	f.Add([]byte("01234567\x00"), uint16(padFlag|4000)) // NUL at byte 8192
	f.Add([]byte("0123456\x00"), uint16(padFlag|8000))  // NUL at byte 8191
	f.Add([]byte{0xFF, 'x', 0x00}, uint16(padFlag|1))
	f.Add([]byte{0xE2, 0x82, 0xAC, 0xFF, 0x00}, uint16(padFlag|8185))
	f.Add([]byte{0xFF, 0xFE, 'h', 0, 0x3D, 0xD8, 0x00, 0xDE}, uint16(3)) // UTF-16LE with a pair
	f.Add([]byte{0xFE, 0xFF, 0, 'h', 0xD8, 0x3D}, uint16(1))             // UTF-16BE, unpaired
	f.Add([]byte{0xFF, 0xFE, 0, 0}, uint16(1))                           // UTF-16LE NUL
	pad := bytes.Repeat([]byte("a"), padLen)
	f.Fuzz(func(t *testing.T, b []byte, split uint16) {
		if len(b) > maxFuzzInput {
			t.Skip("input too large")
		}
		padded := split&padFlag != 0
		if padded {
			b = append(pad[:len(pad):len(pad)], b...)
		}
		text, enc, want := textfile.Decode(b, textfile.BinarySampleBytes)
		at := int(split) % (len(b) + 1)

		got, err := decodeChunks(b[:at], b[at:])
		if want == nil {
			require.NoError(t, err)
			require.Equal(t, text, got)
			back, err := textfile.Encode(text, enc)
			require.NoError(t, err)
			require.Equal(t, b, back, "valid text round-trips to the same bytes")
		} else {
			require.ErrorIs(t, err, want)
		}

		// Small fixed-size chunks must agree too (unpadded only, to keep
		// execs cheap for the minimizer).
		if padded {
			return
		}
		size := int(split)%5 + 1
		var chunks [][]byte
		for rest := b; len(rest) > 0; {
			k := min(size, len(rest))
			chunks = append(chunks, rest[:k])
			rest = rest[k:]
		}
		got, err = decodeChunks(chunks...)
		if want == nil {
			require.NoError(t, err)
			assert.Equal(t, text, got)
		} else {
			assert.ErrorIs(t, err, want)
		}
	})
}

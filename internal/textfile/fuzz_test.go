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
		body := e.Output
		if e.HasBOM {
			require.True(t, strings.HasPrefix(e.Output, textfile.BOM), "BOM preserved")
			body = e.Output[len(textfile.BOM):]
		}
		require.Equal(t, e.After, textfile.NormalizeLF(body), "After is what a re-read shows")
		require.Equal(t, before, e.Before)
		require.NotContains(t, e.After, "\r\n")
		require.Equal(t, textfile.DetectStyle(rest), e.Style)

		switch e.Style {
		case textfile.CRLF:
			require.Equal(t, strings.Count(body, "\n"), strings.Count(body, "\r\n"), "every LF is part of a CRLF")
			require.NotContains(t, body, "\r\r\n")
		case textfile.LF:
			require.Equal(t, body, textfile.NormalizeLF(body), "LF output has no CRLF")
		}

		require.GreaterOrEqual(t, e.Replacements, 1)
		if !all {
			require.Equal(t, 1, e.Replacements)
		}
		require.Equal(t, strings.Count(before, oldNorm), e.Replacements)
		// Normalizing After only ever deletes "\r" bytes, so copies of a new
		// string without "\r" all survive (and stay non-overlapping).
		if newNorm != "" && !strings.Contains(newNorm, "\r") {
			require.GreaterOrEqual(t, strings.Count(e.After, newNorm), e.Replacements)
		}
		// Without any "\r" the edit is a plain replacement.
		if !strings.Contains(before+oldNorm+newNorm, "\r") {
			require.Equal(t, strings.ReplaceAll(before, oldNorm, newNorm), e.After)
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
	fullSample := strings.Repeat("€", textfile.StyleSampleRunes)
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
		if len(s) <= 64 { // keep execs cheap for the minimizer
			require.Equal(t, textfile.LF, textfile.DetectStyle(fullSample+s), "only the first code points count")
		}
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
	pad := bytes.Repeat([]byte("a"), padLen)
	f.Fuzz(func(t *testing.T, b []byte, split uint16) {
		if len(b) > maxFuzzInput {
			t.Skip("input too large")
		}
		padded := split&padFlag != 0
		if padded {
			b = append(pad[:len(pad):len(pad)], b...)
		}
		want := textfile.Validate(b, textfile.BinarySampleBytes)
		at := int(split) % (len(b) + 1)

		got, err := decodeChunks(b[:at], b[at:])
		if want == nil {
			require.NoError(t, err)
			require.Equal(t, string(b), got)
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
			assert.Equal(t, string(b), got)
		} else {
			assert.ErrorIs(t, err, want)
		}
	})
}

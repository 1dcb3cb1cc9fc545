package textfile_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/textfile"
)

// decodeChunks feeds chunks to a fresh Decoder, then closes it. It returns
// the concatenated text and the first error.
func decodeChunks(chunks ...[]byte) (string, error) {
	var d textfile.Decoder
	var sb strings.Builder
	for _, c := range chunks {
		s, err := d.Feed(c)
		if err != nil {
			return sb.String(), err
		}
		sb.WriteString(s)
	}
	return sb.String(), d.Close()
}

func TestDecoderSplitsRunesAtEveryOffset(t *testing.T) {
	for _, text := range []string{"a€b", "x😀y", "ñ", "😀", "€€€", "ab\u0800"} {
		b := []byte(text)
		for i := 0; i <= len(b); i++ {
			got, err := decodeChunks(b[:i], b[i:])
			require.NoError(t, err, "text %q split at %d", text, i)
			assert.Equal(t, text, got, "text %q split at %d", text, i)
		}
	}
}

func TestDecoderByteAtATime(t *testing.T) {
	text := "héllo wörld 😀 €\n"
	var chunks [][]byte
	for i := range len(text) {
		chunks = append(chunks, []byte{text[i]})
	}
	got, err := decodeChunks(chunks...)
	require.NoError(t, err)
	assert.Equal(t, text, got)
}

func TestDecoderFeedReturnsCompleteRunesOnly(t *testing.T) {
	var d textfile.Decoder
	s, err := d.Feed([]byte{'a', 0xE2, 0x82})
	require.NoError(t, err)
	assert.Equal(t, "a", s)
	s, err = d.Feed([]byte{0xAC, 'b'})
	require.NoError(t, err)
	assert.Equal(t, "€b", s)
	require.NoError(t, d.Close())
}

func TestDecoderErrors(t *testing.T) {
	pad := bytes.Repeat([]byte("a"), textfile.BinarySampleBytes)
	tests := []struct {
		name   string
		chunks [][]byte
		want   error // nil means valid
	}{
		{"NUL in first chunk is binary", [][]byte{{'h', 0, 'i'}}, textfile.ErrBinary},
		{"NUL in a later chunk within 8192 bytes is binary", [][]byte{pad[:5000], pad[:3000], {0}}, textfile.ErrBinary},
		{"NUL at byte 8191 is binary", [][]byte{pad[:4000], append(append([]byte{}, pad[:4191]...), 0)}, textfile.ErrBinary},
		{"NUL at byte 8192 is fine", [][]byte{pad[:4000], pad[:4192], {0}}, nil},
		{"NUL at byte 8192 in one chunk is fine", [][]byte{append(append([]byte{}, pad...), 0, 'x')}, nil},
		{"incomplete tail at Close is invalid", [][]byte{{'a', 0xF0, 0x9F}}, textfile.ErrInvalidUTF8},
		{"invalid byte mid-stream is invalid", [][]byte{pad, {'a', 0xFF, 'b'}, []byte("more")}, textfile.ErrInvalidUTF8},
		{"invalid continuation across chunks is invalid", [][]byte{pad, {0xE2}, {'x', 'y'}}, textfile.ErrInvalidUTF8},
		{"overlong encoding is invalid", [][]byte{pad, {0xC0, 0x80}}, textfile.ErrInvalidUTF8},
		{"NUL after invalid byte in sample is binary", [][]byte{{0xFF}, pad[:100], {0}}, textfile.ErrBinary},
		{"invalid byte in short stream is reported at Close", [][]byte{{'a', 0xFF}}, textfile.ErrInvalidUTF8},
		{"empty stream is valid", nil, nil},
		{"empty chunks are valid", [][]byte{{}, nil, []byte("x"), {}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeChunks(tt.chunks...)
			all := bytes.Join(tt.chunks, nil)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Equal(t, string(all), got)
				return
			}
			assert.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, textfile.Validate(all, textfile.BinarySampleBytes), tt.want, "agrees with Validate")
		})
	}
}

func TestDecoderErrorIsSticky(t *testing.T) {
	var d textfile.Decoder
	_, err := d.Feed([]byte{0})
	require.ErrorIs(t, err, textfile.ErrBinary)
	s, err := d.Feed([]byte("fine"))
	assert.Empty(t, s)
	assert.ErrorIs(t, err, textfile.ErrBinary)
	assert.ErrorIs(t, d.Close(), textfile.ErrBinary)

	var d2 textfile.Decoder
	_, err = d2.Feed([]byte{0xE2})
	require.NoError(t, err)
	require.ErrorIs(t, d2.Close(), textfile.ErrInvalidUTF8)
	assert.ErrorIs(t, d2.Close(), textfile.ErrInvalidUTF8)
}

func TestDecoderDefersInvalidUntilSampleComplete(t *testing.T) {
	var d textfile.Decoder
	s, err := d.Feed([]byte{'a', 0xFF})
	require.NoError(t, err, "a NUL may still follow within the sample")
	assert.Empty(t, s)
	_, err = d.Feed(bytes.Repeat([]byte("b"), textfile.BinarySampleBytes))
	assert.ErrorIs(t, err, textfile.ErrInvalidUTF8)
}

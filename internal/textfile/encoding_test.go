package textfile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/textfile"
)

func TestDecodeEncode(t *testing.T) {
	tests := []struct {
		name     string
		raw      []byte
		wantText string
		wantEnc  textfile.Encoding
	}{
		{"UTF-8 is byte for byte", []byte("a\r\nb"), "a\r\nb", textfile.UTF8},
		{"UTF-8 BOM is kept as text", []byte("\xEF\xBB\xBFx"), "\uFEFFx", textfile.UTF8},
		{"UTF-16LE with BOM", []byte{0xFF, 0xFE, 'h', 0, 'i', 0, '\r', 0, '\n', 0}, "\uFEFFhi\r\n", textfile.UTF16LE},
		{"UTF-16BE with BOM", []byte{0xFE, 0xFF, 0, 'h', 0x20, 0xAC}, "\uFEFFh€", textfile.UTF16BE},
		{"UTF-16LE surrogate pair", []byte{0xFF, 0xFE, 0x3D, 0xD8, 0x00, 0xDE}, "\uFEFF😀", textfile.UTF16LE},
		{"UTF-16 real U+FFFD is text", []byte{0xFE, 0xFF, 0xFF, 0xFD}, "\uFEFF\uFFFD", textfile.UTF16BE},
		{"UTF-16 BOM alone", []byte{0xFF, 0xFE}, "\uFEFF", textfile.UTF16LE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, enc, err := textfile.Decode(tt.raw, textfile.BinarySampleBytes)
			require.NoError(t, err)
			assert.Equal(t, tt.wantText, text)
			assert.Equal(t, tt.wantEnc, enc)
			back, err := textfile.Encode(text, enc)
			require.NoError(t, err)
			assert.Equal(t, tt.raw, back, "round trip")
			for i := range tt.raw {
				got, err := decodeChunks(tt.raw[:i], tt.raw[i:])
				require.NoError(t, err, "split at %d", i)
				assert.Equal(t, tt.wantText, got, "split at %d", i)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want error
	}{
		{"Latin-1 is invalid UTF-8", []byte("caf\xE9"), textfile.ErrInvalidUTF8},
		{"UTF-16 odd length", []byte{0xFF, 0xFE, 'h', 0, 'i'}, textfile.ErrInvalidUTF16},
		{"UTF-16 unpaired high surrogate at the end", []byte{0xFF, 0xFE, 0x3D, 0xD8}, textfile.ErrInvalidUTF16},
		{"UTF-16 unpaired low surrogate", []byte{0xFE, 0xFF, 0xDE, 0x00, 0, 'x'}, textfile.ErrInvalidUTF16},
		{"UTF-16 high surrogate before a letter", []byte{0xFE, 0xFF, 0xD8, 0x3D, 0, 'x'}, textfile.ErrInvalidUTF16},
		{"UTF-16 U+0000 is binary", []byte{0xFF, 0xFE, 'a', 0, 0, 0}, textfile.ErrBinary},
		{"UTF-16 U+0000 before an invalid unit is binary", []byte{0xFF, 0xFE, 0, 0, 0x3D, 0xD8, 'x', 0}, textfile.ErrBinary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := textfile.Decode(tt.raw, textfile.BinarySampleBytes)
			assert.ErrorIs(t, err, tt.want)
			for i := range tt.raw {
				_, err := decodeChunks(tt.raw[:i], tt.raw[i:])
				assert.ErrorIs(t, err, tt.want, "split at %d", i)
			}
		})
	}
}

func TestEncodeRefusesInvalidUTF8ForUTF16(t *testing.T) {
	_, err := textfile.Encode("a\xFF", textfile.UTF16LE)
	assert.ErrorIs(t, err, textfile.ErrInvalidUTF8)
	b, err := textfile.Encode("a\xFF", textfile.UTF8)
	require.NoError(t, err)
	assert.Equal(t, []byte("a\xFF"), b)
}

func TestEncodingString(t *testing.T) {
	assert.Equal(t, "UTF-8", textfile.UTF8.String())
	assert.Equal(t, "UTF-16LE", textfile.UTF16LE.String())
	assert.Equal(t, "UTF-16BE", textfile.UTF16BE.String())
	assert.Equal(t, "Encoding(9)", textfile.Encoding(9).String())
}

package textfile_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/internal/textfile"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		nulScope int
		want     error
	}{
		{"plain text is valid", []byte("hello"), textfile.BinarySampleBytes, nil},
		{"empty input is valid", nil, textfile.BinarySampleBytes, nil},
		{"NUL in scope is binary", []byte{0x68, 0x00, 0x69}, textfile.BinarySampleBytes, textfile.ErrBinary},
		{"invalid byte is invalid UTF-8", []byte{0x68, 0xFF, 0x69}, textfile.BinarySampleBytes, textfile.ErrInvalidUTF8},
		{"NUL after scope passes", []byte{0x68, 0x69, 0x00}, 2, nil},
		{"NUL at last scope byte is binary", []byte{0x68, 0x00, 0x69}, 2, textfile.ErrBinary},
		{"negative scope checks all bytes", append(bytes.Repeat([]byte("a"), 10000), 0), -1, textfile.ErrBinary},
		{"zero scope ignores NUL", []byte{0x00}, 0, nil},
		{"NUL beyond 8192 bytes passes", append(bytes.Repeat([]byte("a"), textfile.BinarySampleBytes), 0), textfile.BinarySampleBytes, nil},
		{"NUL wins over invalid UTF-8", []byte{0xFF, 0x00}, textfile.BinarySampleBytes, textfile.ErrBinary},
		{"incomplete trailing sequence is invalid", []byte{0x61, 0xE2, 0x82}, textfile.BinarySampleBytes, textfile.ErrInvalidUTF8},
		{"complete multi-byte text is valid", []byte("€ ünï 😀"), textfile.BinarySampleBytes, nil},
		{"surrogate encoding is invalid", []byte{0xED, 0xA0, 0x80}, textfile.BinarySampleBytes, textfile.ErrInvalidUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := textfile.Validate(tt.in, tt.nulScope)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

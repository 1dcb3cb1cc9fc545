package textfile_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/internal/textfile"
)

func hashOf(chunks ...string) string {
	h := textfile.NewTextHash()
	for _, c := range chunks {
		h.Write(c)
	}
	return h.Sum()
}

// TestTextHash covers the content hash of spec difference 14: independent of
// the chunking, different for a one-byte change, 32 hex digits.
func TestTextHash(t *testing.T) {
	text := strings.Repeat("héllo wörld\r\n", 10000)
	whole := hashOf(text)
	assert.Len(t, whole, 32)
	assert.Equal(t, whole, hashOf(text[:7], text[7:70000], text[70000:]), "chunking does not matter")
	assert.Equal(t, whole, hashOf("", text, ""), "empty chunks do not matter")
	assert.NotEqual(t, whole, hashOf(strings.Replace(text, "h", "H", 1)), "one changed byte")
	assert.NotEqual(t, hashOf(""), hashOf("\n"))
	assert.Equal(t, "99aa06d3014798d86001c324468d497f", hashOf(""), "XXH3-128 of the empty input")
}

// BenchmarkTextHash hashes 16 MiB of text in the 64 KiB chunks of a
// streamed read: the cost a whole-file read adds for its fingerprint.
func BenchmarkTextHash(b *testing.B) {
	text := strings.Repeat("0123456789abcde\n", 1<<20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		h := textfile.NewTextHash()
		for i := 0; i < len(text); i += 64 << 10 {
			h.Write(text[i : i+64<<10])
		}
		_ = h.Sum()
	}
}

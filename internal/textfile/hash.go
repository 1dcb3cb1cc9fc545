package textfile

import (
	"encoding/hex"

	"github.com/zeebo/xxh3"
)

// TextHash hashes a text fed in chunks: the 128-bit XXH3 of the
// concatenation, whatever the chunking. The read tool hashes what a
// whole-file read streams and the backend the text it finds under the
// target's lock, so the two agree exactly when the texts do (spec
// difference 14).
type TextHash struct{ h *xxh3.Hasher }

// NewTextHash returns the hash of the empty text.
func NewTextHash() TextHash { return TextHash{h: xxh3.New()} }

// Write adds chunk to the hashed text.
func (t TextHash) Write(chunk string) {
	_, _ = t.h.WriteString(chunk) // never fails
}

// Sum returns the hash of the text written so far as 32 lowercase hex
// digits.
func (t TextHash) Sum() string {
	sum := t.h.Sum128().Bytes()
	return hex.EncodeToString(sum[:])
}

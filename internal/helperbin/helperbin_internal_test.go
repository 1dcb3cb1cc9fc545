package helperbin

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestProgramIsTheStampedHelper: the embedded bytes are taken only when
// their SHA-256 is the one the build stamped; an image from elsewhere (a
// helper.bin of another tree, an empty file) or an unstamped build gives
// none, and harness starts itself.
func TestProgramIsTheStampedHelper(t *testing.T) {
	image := []byte("\x7fELF the helper this build made")
	good := sha256.Sum256(image)
	other := sha256.Sum256([]byte("\x7fELF an older tree's helper"))
	cases := []struct {
		name    string
		program []byte
		sum     string
		want    []byte
	}{
		{"the stamped helper", image, hex.EncodeToString(good[:]), image},
		{"another tree's helper", image, hex.EncodeToString(other[:]), nil},
		{"an empty image", []byte{}, hex.EncodeToString(good[:]), nil},
		{"no stamp (built with the tag alone)", image, "", nil},
		{"no helper (built without the tag)", nil, "", nil},
	}
	savedProgram, savedSum := program, sum
	t.Cleanup(func() { program, sum = savedProgram, savedSum })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			program, sum = c.program, c.sum
			assert.Equal(t, c.want, check())
			assert.Equal(t, len(c.program) > 0 && c.sum != "", Present())
		})
	}
}

//go:build linux

package toolfs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A result says, in one line, that the backend rewrote the file in place
// (spec difference 9); an atomic publication adds nothing.
func TestInPlaceNote(t *testing.T) {
	assert.Empty(t, inPlaceNote(""))
	assert.Equal(t, "\nThe file was rewritten in place, not atomically: the directory does not allow this process to publish a new file.",
		inPlaceNote("the directory does not allow this process to publish a new file"))
}

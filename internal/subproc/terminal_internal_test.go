//go:build linux

package subproc

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStdinIsDevNullWithoutAnInput: without an input, or with a terminal,
// the runner's child gets exec.Cmd's /dev/null on descriptor 0, never a
// closed descriptor (a nil *os.File in a non-nil interface closes it; one
// stage in a thousand died starting, as an ordinary user's stage under
// host churn did, "standard file descriptor 0 closed").
func TestStdinIsDevNullWithoutAnInput(t *testing.T) {
	var none *Input
	var r io.Reader // as exec.Cmd.Stdin takes it
	r = none.stdin()
	assert.True(t, r == nil, "no input: a nil interface")
	term, err := NewInput(true, 0, 0)
	require.NoError(t, err)
	r = term.stdin()
	assert.True(t, r == nil, "a terminal: a nil interface")
	pipe, err := NewInput(false, 0, 0)
	require.NoError(t, err)
	defer pipe.Close()
	assert.NotNil(t, pipe.stdin())
}

//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestKeptReservations: a kept placeholder stays across releases of
// others; one whose file went is released and replaced; at most maxKept
// are kept; close removes them.
func TestKeptReservations(t *testing.T) {
	dir := t.TempDir()
	reserve := func(name string) *subproc.Reservation {
		t.Helper()
		r, err := subproc.ReserveFile(filepath.Join(dir, name), ".\n")
		require.NoError(t, err)
		require.NotNil(t, r)
		return r
	}
	var k keptReservations
	a := reserve("a")
	require.True(t, k.keep(a))
	assert.Same(t, a, k.holding(a.Path))
	dup := reserve("a") // a second command's hold of the same placeholder
	assert.False(t, k.keep(dup), "kept twice")
	subproc.ReleaseAll(dup)
	assert.FileExists(t, a.Path, "removed while kept")

	require.NoError(t, os.Remove(a.Path)) // the repository's owner removed it
	assert.Nil(t, k.holding(a.Path))
	b := reserve("a")
	require.True(t, k.keep(b))

	for i := range maxKept + 5 {
		r := reserve(strconv.Itoa(i))
		if !k.keep(r) {
			subproc.ReleaseAll(r)
		}
	}
	assert.Len(t, k.by, maxKept)
	require.NoError(t, os.Remove(b.Path))
	c := reserve("c")
	assert.True(t, k.keep(c), "a kept reservation no longer current still counts")

	k.close()
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "close left placeholders")
}

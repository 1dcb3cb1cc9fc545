//go:build linux

package fssandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// meetsNoSymlink is the shortcut of checkSymlinks: true only when the
// kernel's walk of the path meets no symlink, so the component-wise walk
// runs for every path with a link in it.
func TestMeetsNoSymlink(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(base, "d", "e"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "d", "f"), nil, 0o644))
	require.NoError(t, os.Symlink("d", filepath.Join(base, "ld")))
	require.NoError(t, os.Symlink("f", filepath.Join(base, "d", "lf")))
	require.NoError(t, os.Symlink("missing", filepath.Join(base, "d", "dangling")))
	for _, c := range []struct {
		rel  string
		want bool
	}{
		{"d/f", true},
		{"d/e", true},
		{"d/new.txt", true},
		{"d/missing/deeper/new.txt", true},
		{"d/f/below", true}, // ENOTDIR: nothing after the file is followed
		{"ld/f", false},
		{"ld/new.txt", false},
		{"d/lf", false},
		{"d/dangling", false},
	} {
		assert.Equal(t, c.want, meetsNoSymlink(filepath.Join(base, c.rel)), c.rel)
	}
}

//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/realpath"
)

// TestLinkChain: the links the kernel follows resolving a path, in order,
// through its target's directory components too; a loop stops at the
// kernel's 40; a missing component ends the chain.
func TestLinkChain(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(d, "real/sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "real/sub/f"), nil, 0o644))
	for link, target := range map[string]string{"a": "b", "b": "dir/sub/f", "dir": filepath.Join(d, "real"), "loop": "loop", "gone": "missing/x"} {
		require.NoError(t, os.Symlink(target, filepath.Join(d, link)))
	}
	assert.Equal(t, []string{filepath.Join(d, "a"), filepath.Join(d, "b"), filepath.Join(d, "dir")}, linkChain(filepath.Join(d, "a")))
	assert.Len(t, linkChain(filepath.Join(d, "loop")), realpath.MaxLinks)
	assert.Equal(t, []string{filepath.Join(d, "gone")}, linkChain(filepath.Join(d, "gone")))
	assert.Empty(t, linkChain(filepath.Join(d, "real/sub/f")))
}

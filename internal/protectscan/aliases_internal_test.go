//go:build linux

package protectscan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestUnchangedSince (the second attack review of the other names): a walk
// that found fewer names than asked for is complete only when no
// directory it read changed since shortly before it began: a name moved
// into a directory already read, out of one not yet read, leaves no other
// trace. A directory whose entries changed, whose own metadata changed,
// that was replaced, or that is gone, is a change; one left alone is not.
func TestUnchangedSince(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	dirs := map[string]string{}
	for _, n := range []string{"quiet", "entries", "mode", "replaced", "gone"} {
		dirs[n] = filepath.Join(base, n)
		require.NoError(t, os.Mkdir(dirs[n], 0o755))
	}
	time.Sleep(2 * AliasesRacy)
	read := func(n string) []readDir {
		var st unix.Stat_t
		require.NoError(t, unix.Stat(dirs[n], &st))
		return []readDir{{path: dirs[n], ino: st.Ino}}
	}
	var st unix.Stat_t
	require.NoError(t, unix.Stat(base, &st))
	dev := uint64(st.Dev) //nolint:unconvert // Dev is uint64 on most arches only
	began := time.Now().Add(-AliasesRacy)
	r := map[string][]readDir{}
	for n := range dirs {
		r[n] = read(n)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dirs["entries"], "moved-in"), nil, 0o644))
	require.NoError(t, os.Chmod(dirs["mode"], 0o700))
	require.NoError(t, os.Rename(dirs["replaced"], dirs["replaced"]+".old"))
	require.NoError(t, os.Mkdir(dirs["replaced"], 0o755))
	require.NoError(t, os.Remove(dirs["gone"]))
	assert.True(t, unchangedSince(r["quiet"], dev, began), "left alone")
	for _, n := range []string{"entries", "mode", "replaced", "gone"} {
		assert.False(t, unchangedSince(r[n], dev, began), n)
	}
}

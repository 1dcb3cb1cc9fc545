package dirwatch_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirwatch"
)

// TestMountTable: MountTable is /proc/self/mountinfo as a fresh read gives
// it, again after a filesystem is mounted and after it is unmounted (root:
// a tmpfs mounted here), while a table read with nothing changed is the
// one kept.
func TestMountTable(t *testing.T) {
	fresh := func() []byte {
		b, err := os.ReadFile("/proc/self/mountinfo")
		require.NoError(t, err)
		return b
	}
	first := dirwatch.MountTable()
	require.NotNil(t, first)
	assert.Equal(t, string(fresh()), string(first))
	again := dirwatch.MountTable()
	assert.Same(t, &first[0], &again[0], "read again with nothing mounted")
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	mounted := dirwatch.MountTable()
	assert.Contains(t, string(mounted), " "+dir+" ")
	assert.Equal(t, string(fresh()), string(mounted))
	require.NoError(t, unix.Unmount(dir, 0))
	after := dirwatch.MountTable()
	assert.NotContains(t, string(after), " "+dir+" ")
	assert.Equal(t, string(fresh()), string(after))
}

//go:build linux

package cgroup_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/cgroup"
)

// TestRemoveStale: the parent groups of servers that are gone are removed
// with their empty command groups; a live server's, one still holding
// something, and names that are not ours stay.
func TestRemoveStale(t *testing.T) {
	base := t.TempDir()
	dead := filepath.Join(base, "harness-2147483600") // beyond pid_max
	live := filepath.Join(base, "harness-1")
	self := filepath.Join(base, "harness-"+strconv.Itoa(os.Getpid()))
	busy := filepath.Join(base, "harness-2147483601")
	other := filepath.Join(base, "other-2147483600")
	for _, d := range []string{filepath.Join(dead, "cmd-1"), filepath.Join(dead, "cmd-2"), live, self, filepath.Join(busy, "cmd-1"), other} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(busy, "cmd-1", "x"), nil, 0o644))
	cgroup.RemoveStale(self)
	assert.NoDirExists(t, dead)
	assert.DirExists(t, live)
	assert.DirExists(t, self)
	assert.DirExists(t, filepath.Join(busy, "cmd-1"))
	assert.DirExists(t, other)
}

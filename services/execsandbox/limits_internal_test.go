//go:build linux

package execsandbox

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/cgroup"
)

// TestLimitersOfOneProcessShareNoGroupName: two runners of one process
// (a Go program composing two, the tests' graphs) share the process's
// parent cgroup; each gets its commands' groups, under names of their own.
func TestLimitersOfOneProcessShareNoGroupName(t *testing.T) {
	a, b := newLimiter(), newLimiter()
	t.Cleanup(func() { _, _ = a.close(), b.close() })
	ma, err := a.manager()
	if err != nil {
		t.Skip("no cgroups for this process: " + err.Error())
	}
	mb, err := b.manager()
	require.NoError(t, err)
	lim := cgroup.Limits{MemoryBytes: 64 << 20, Pids: 64}
	ga, err := a.group(ma, lim)
	require.NoError(t, err)
	gb, err := b.group(mb, lim)
	require.NoError(t, err, "the second runner's first command gets a group too")
	require.NoError(t, ga.Delete())
	require.NoError(t, gb.Delete())
}

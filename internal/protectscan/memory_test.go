//go:build linux

package protectscan_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/protectscan"
)

// TestScan_AllocationsDoNotGrowWithEntries scans, uncached, a directory of
// 1,000 files and one of 10,000: the allocations of the two scans must be
// the same give or take a few (the getdents buffer is the only memory a
// file costs).
func TestScan_AllocationsDoNotGrowWithEntries(t *testing.T) {
	base := tempRoot(t)
	allocs := map[int]float64{}
	for _, n := range []int{1_000, 10_000} {
		ws := filepath.Join(base, "ws", "n", filepath.Base(padded(n)))
		build(t, ws, ".git/")
		manyFiles(t, filepath.Join(ws, "many"), n)
		roots := []protectscan.Root{{Path: ws}}
		allocs[n] = testing.AllocsPerRun(3, func() {
			entries, err := protectscan.New(protectscan.Options{}).Scan(t.Context(), roots, protectMeta)
			require.NoError(t, err)
			require.Len(t, entries, 1)
		})
	}
	t.Logf("allocations per scan: %v", allocs)
	assert.InDelta(t, allocs[1_000], allocs[10_000], 5)
}

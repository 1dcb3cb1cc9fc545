//go:build linux

package subproc_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dsh-go/harness/internal/subproc"
)

// BenchmarkReleaseBesideAHolder: the end of a command whose 50 reserved
// names (a workspace root's missing host-run files) another command still
// holds (a background command of the same workspace), so no release may
// remove them and each waits out its tries (some 15 ms). One at a time, as
// the runner released them, the waits add up (with the earlier tries, 1 ms
// apart: some 260 ms a command over MCP); together, ReleaseAll waits them
// out once.
func BenchmarkReleaseBesideAHolder(b *testing.B) {
	dir := b.TempDir()
	var paths []string
	for i := range 50 {
		paths = append(paths, filepath.Join(dir, ".name"+strconv.Itoa(i)))
	}
	background := make([]*subproc.Reservation, len(paths))
	for i, p := range paths {
		r, err := subproc.Reserve(p, true)
		if err != nil || r == nil {
			b.Fatal(p, err)
		}
		background[i] = r
	}
	defer subproc.ReleaseAll(background...)
	reserve := func() []*subproc.Reservation {
		rs := make([]*subproc.Reservation, len(paths))
		for i, p := range paths {
			r, err := subproc.Reserve(p, true)
			if err != nil || r == nil {
				b.Fatal(p, err)
			}
			rs[i] = r
		}
		return rs
	}
	b.Run("one at a time", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			rs := reserve()
			b.StartTimer()
			for _, r := range rs {
				subproc.ReleaseAll(r)
			}
		}
	})
	b.Run("together", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			rs := reserve()
			b.StartTimer()
			subproc.ReleaseAll(rs...)
		}
	})
}

//go:build linux

package protectscan_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/protectscan"
)

// TestScan_RacingRenamesAndSymlinkSwaps scans, with one shared Scanner from
// several goroutines, a tree whose directories are renamed and swapped for
// symlinks to an outside directory holding a `.git` meanwhile: no scan may
// fail, return a path outside the roots, or return anything of the outside
// directory.
func TestScan_RacingRenamesAndSymlinkSwaps(t *testing.T) {
	base := tempRoot(t)
	ws := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	build(t, base, "outside/.git/", "outside/x.key", "ws/keep/.git/",
		"ws/ren/sub/.git/", "ws/swap/sub/.git/", "ws/gitswap/.git/")
	outsideIDs := map[[2]uint64]bool{}
	for _, p := range []string{outside, outside + "/.git", outside + "/x.key"} {
		dev, ino := identity(t, p)
		outsideIDs[[2]uint64{dev, ino}] = true
	}

	stop := make(chan struct{})
	var mutators sync.WaitGroup
	var rounds atomic.Int64
	mutate := func(steps ...func() error) {
		mutators.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, step := range steps {
					if err := step(); err != nil {
						t.Error(err)
						return
					}
				}
				rounds.Add(1)
			}
		})
	}
	in := func(p string) string { return filepath.Join(ws, p) }
	// A directory renamed back and forth.
	mutate(
		func() error { return os.Rename(in("ren"), in("ren2")) },
		func() error { return os.Rename(in("ren2"), in("ren")) },
	)
	// A directory swapped for a symlink to the outside directory.
	mutate(
		func() error { return os.Rename(in("swap"), in("swap.real")) },
		func() error { return os.Symlink(outside, in("swap")) },
		func() error { return os.Remove(in("swap")) },
		func() error { return os.Rename(in("swap.real"), in("swap")) },
	)
	// A .git directory swapped for a symlink to the outside .git, and the
	// swap itself done by an atomic rename over it.
	mutate(
		func() error { return os.Rename(in("gitswap/.git"), in("gitswap/real")) },
		func() error { return os.Symlink(outside+"/.git", in("gitswap/.git")) },
		func() error { return os.Symlink("/", in("gitswap/tmp")) },
		func() error { return os.Rename(in("gitswap/tmp"), in("gitswap/.git")) },
		func() error { return os.Remove(in("gitswap/.git")) },
		func() error { return os.Rename(in("gitswap/real"), in("gitswap/.git")) },
	)

	s := protectscan.New(protectscan.Options{})
	roots := []protectscan.Root{{Path: ws}}
	var scanners sync.WaitGroup
	var scans atomic.Int64
	deadline := time.Now().Add(time.Second)
	for range 3 {
		scanners.Go(func() {
			for time.Now().Before(deadline) {
				entries, err := s.Scan(t.Context(), roots, protectMeta)
				if !assert.NoError(t, err) {
					return
				}
				scans.Add(1)
				kept := false
				for _, e := range entries {
					kept = kept || e.Path == ws+"/keep/.git"
					assert.True(t, strings.HasPrefix(e.Path, ws+"/"), "outside the root: %s", e.Path)
					assert.False(t, outsideIDs[[2]uint64{e.Dev, e.Ino}], "the outside directory's %s", e.Path)
					if filepath.Base(e.Path) == ".git" {
						assert.True(t, e.Dir, "a .git symlink returned: %s", e.Path)
					}
				}
				assert.True(t, kept, "the untouched .git is always found")
			}
		})
	}
	scanners.Wait()
	close(stop)
	mutators.Wait()
	require.Positive(t, scans.Load())
	require.Positive(t, rounds.Load())
	t.Logf("%d scans during %d mutation rounds", scans.Load(), rounds.Load())
}

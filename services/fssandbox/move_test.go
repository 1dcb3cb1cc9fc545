//go:build linux

package fssandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// moveRaceDuration is how long the move race runs: 30 s under
// HARNESS_SOAK=1 (make soak), a few seconds otherwise (make test).
func moveRaceDuration() time.Duration {
	switch {
	case os.Getenv("HARNESS_SOAK") == "1":
		return 30 * time.Second
	case testing.Short():
		return time.Second // make check's tier
	}
	return 3 * time.Second
}

// TestMoveOutRace is issue 12's fourth escape: writers create files in ws/d/
// while another goroutine renames ws/d to a directory outside every writable
// root and back every 0.5 ms. The descriptor a write holds follows the
// directory, so without a kernel check at the syscall a write lands outside
// and reports success. Measured before the fix: 94 of 1,822 writes (8
// writers) and 261 of 1,727 (6 writers) landed outside.
//
// The mover lists the moved directory right after moving it out and again
// right before moving it back: a name that appears between the two listings
// landed while the directory was outside. Under Landlock no such name may
// belong to a write reported as a success (on the fallback, one moved back
// before its check may: it is counted); every reported success must be
// inside at the end,
// with its content; nothing may remain outside; and every failed write must
// be a denial, or not found when a fresh ws/d replaced the one it opened.
func TestMoveOutRace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		writers int
		fence   fssandbox.Config
	}{
		{"8 writers under Landlock", 8, fssandbox.Config{}},
		{"6 writers under Landlock", 6, fssandbox.Config{}},
		{"8 writers, fallback without Landlock", 8, fssandbox.Config{Landlock: fssandbox.LandlockOff}},
		{"6 writers, fallback without Landlock", 6, fssandbox.Config{Landlock: fssandbox.LandlockOff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moveOutRace(t, tc.writers, tc.fence)
		})
	}
}

func moveOutRace(t *testing.T, writers int, fence fssandbox.Config) {
	w := newWorld(t)
	inside, outside := filepath.Join(w.ws, "d"), filepath.Join(w.outside, "d")
	require.NoError(t, os.Mkdir(inside, 0o755))
	f := newFence(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}}, w.ws, fence)
	if fence.Landlock != fssandbox.LandlockOff && f.Layers().LandlockABI == 0 {
		t.Skipf("Landlock unavailable: %s", f.Layers().NoLandlock)
	}

	stop := make(chan struct{})
	var mover sync.WaitGroup
	var moves int
	landedOutside := map[string]bool{}
	mover.Go(func() {
		for extra := 0; ; {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Rename(inside, outside); err != nil {
				// A writer made a fresh ws/d while the old one was out, and
				// it was moved back over: take the next turn.
				continue
			}
			moves++
			before := names(t, outside)
			time.Sleep(500 * time.Microsecond)
			for name := range names(t, outside) {
				if !before[name] {
					landedOutside[name] = true
				}
			}
			for unix.Rename(outside, inside) != nil {
				// A writer re-created ws/d meanwhile (missing parents are
				// made): park that one inside and bring the original back.
				extra++
				if err := os.Rename(inside, filepath.Join(w.ws, fmt.Sprintf("d.extra%d", extra))); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("park: %v", err)
					return
				}
			}
		}
	})

	type result struct {
		name string
		err  error
	}
	results := make(chan result, 1<<16)
	deadline := time.Now().Add(moveRaceDuration())
	var ws sync.WaitGroup
	for g := range writers {
		ws.Go(func() {
			ctx := context.Background()
			for i := 0; time.Now().Before(deadline); i++ {
				name := fmt.Sprintf("w%d-%d.txt", g, i)
				tg, err := f.Resolve(ctx, filepath.Join(inside, name), fs.ResolveOptions{})
				if err == nil {
					_, err = f.WriteText(ctx, tg, name, fs.WriteOptions{})
				}
				results <- result{name, err}
			}
		})
	}
	ws.Wait()
	close(stop)
	mover.Wait()
	close(results)

	codes := map[fs.Code]int{}
	var landed []string
	for r := range results {
		if r.err == nil {
			landed = append(landed, r.name)
			continue
		}
		codes[fs.CodeOf(r.err)]++
		// A directory moved away between the open of ws/d and the syscall
		// in it is refused as a denial; missing when a fresh ws/d replaced
		// it meanwhile; and a permission error in the rare case where the
		// directory was back inside before the refusal was classified
		// (landlock.Denied looks at where the directory is now), or when
		// the unnamed file was asked of a directory the mover had just
		// deleted (O_TMPFILE answers EPERM there). Nothing is written in
		// any of these cases.
		assert.Contains(t, []fs.Code{fs.CodeSandboxDenied, fs.CodeNotFound, fs.CodePermissionDenied}, fs.CodeOf(r.err), "%v", r.err)
	}
	defer func() {
		t.Logf("writers=%d writes=%d landed=%d errors=%v moves=%d landed-while-outside=%d", writers, len(landed)+sum(codes), len(landed), codes, moves, len(landedOutside))
	}()
	assert.Empty(t, names(t, w.outside), "nothing may remain outside")
	inWorkspace := map[string]bool{}
	residue := 0
	err := filepath.WalkDir(w.ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasSuffix(d.Name(), ".tmpdir") {
			// A staging directory whose cleanup the domain refused while
			// its directory was outside: inside now, reclaimed later.
			residue++
			return filepath.SkipDir
		}
		if err == nil && d.Type().IsRegular() && strings.HasPrefix(d.Name(), ".") && strings.HasSuffix(d.Name(), ".tmp") {
			// A temporary name whose cleanup the domain refused likewise.
			residue++
			return nil
		}
		if err == nil && d.Type().IsRegular() {
			inWorkspace[d.Name()] = true
			assert.Equal(t, d.Name(), readFile(t, p), "content of %s", p)
		}
		return err
	})
	require.NoError(t, err)
	var escaped, lost []string
	for _, name := range landed {
		if landedOutside[name] {
			escaped = append(escaped, name)
		}
		if !inWorkspace[name] {
			lost = append(lost, name)
		}
	}
	if fence.Landlock == fssandbox.LandlockOff {
		// The fallback checks after publication: a directory moved back
		// between the publication and the check leaves the write inside and
		// reported as a success (README, "What is not guaranteed"). Nothing
		// remains outside (asserted above), and every success is inside
		// (asserted below).
		t.Logf("successes published while the directory was outside and moved back before the check: %d", len(escaped))
	} else {
		assert.Empty(t, escaped, "writes reported as successes that landed while the directory was outside")
	}
	assert.Empty(t, lost, "writes reported as successes that are not in the workspace")
	assert.Positive(t, len(landed), "some writes landed")
	assert.Positive(t, moves, "the directory moved")
	t.Logf("temporary names and staging directories left inside: %d", residue)
}

// names returns the names in dir (none when it is missing).
func names(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("list %s: %v", dir, err)
	}
	out := make(map[string]bool, len(entries))
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

func sum(m map[fs.Code]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

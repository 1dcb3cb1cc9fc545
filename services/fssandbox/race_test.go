//go:build linux

package fssandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestSymlinkSwapRace is the race the original design accepts and this one
// does not: one goroutine swaps ws/d between a real directory and a symlink
// to the outside directory (an atomic RENAME_EXCHANGE with ws/d.swap, so d
// always exists) while writers mutate through ws/d 10,000 times, with
// missing parents and edits among them. Zero files may ever appear outside,
// and no staging residue may remain anywhere.
func TestSymlinkSwapRace(t *testing.T) {
	const writes = 10_000
	if testing.Short() {
		t.Skip("10,000 durable writes")
	}
	w := newWorld(t)
	fixture.Build(t, w.ws, "d/f.txt: seed", "d.swap => "+w.outside)
	fixture.Build(t, w.outside, "f.txt: outside seed")
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	outsideBefore := fixture.Snapshot(t, w.outside)

	stop := make(chan struct{})
	var swaps atomic.Int64
	var swapper sync.WaitGroup
	swapper.Go(func() {
		d, swap := filepath.Join(w.ws, "d"), filepath.Join(w.ws, "d.swap")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			swaps.Add(1)
			time.Sleep(20 * time.Microsecond) // let some writes land between swaps
		}
	})

	paths := []string{"d/f.txt", "d/new.txt", "d/nested/deep/g.txt"}
	var ok, denied, other atomic.Int64
	var writers sync.WaitGroup
	for g := range 4 {
		writers.Go(func() {
			for i := g; i < writes; i += 4 {
				err := raceOnce(f, filepath.Join(w.ws, paths[i%len(paths)]), i)
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, fs.ErrSandboxDenied):
					denied.Add(1)
				default:
					// A swap can also make a path vanish or change type
					// between resolution and use: such errors are fine, an
					// escape is not.
					other.Add(1)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	swapper.Wait()

	t.Logf("writes=%d landed=%d denied=%d other-errors=%d swaps=%d", writes, ok.Load(), denied.Load(), other.Load(), swaps.Load())
	assert.Equal(t, outsideBefore, fixture.Snapshot(t, w.outside), "a file appeared or changed outside: an escape")
	assert.Empty(t, fixture.Residue(t, w.base), "staging residue")
	assert.Positive(t, ok.Load(), "some writes landed inside")
	assert.Positive(t, denied.Load(), "some writes were denied")
}

func raceOnce(f interface {
	Resolve(context.Context, string, fs.ResolveOptions) (fs.Target, error)
	WriteText(context.Context, fs.Target, string, fs.WriteOptions) (fs.WriteOutcome, error)
	EditText(context.Context, fs.Target, fs.EditRequest) (fs.EditOutcome, error)
}, p string, i int,
) error {
	ctx := context.Background()
	tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
	if err != nil {
		return err
	}
	if i%5 == 4 {
		_, err = f.EditText(ctx, tg, fs.EditRequest{OldString: "seed", NewString: "seed"})
		return err
	}
	_, err = f.WriteText(ctx, tg, "seed", fs.WriteOptions{})
	return err
}

func TestSymlinkSwapRaceFixture(t *testing.T) {
	w := newWorld(t)
	fixture.Build(t, w.ws, "d/", "d.swap => "+w.outside)
	require.NoError(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(w.ws, "d"), unix.AT_FDCWD, filepath.Join(w.ws, "d.swap"), unix.RENAME_EXCHANGE))
	info, err := os.Lstat(filepath.Join(w.ws, "d"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, info.Mode().Type(), "the exchange puts the link at d")
}

//go:build linux

package fsbackend_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/internal/fsbackend"
)

// TestMixedMutationsLeaveNoResidue runs 10,000 writes and edits from 8
// goroutines over a few files, a directory and a nested path, with a mix of
// intents and literals that makes many of them fail, then checks that no
// staging entry remains anywhere and the lock table is empty.
func TestMixedMutationsLeaveNoResidue(t *testing.T) {
	const total, workers = 10_000, 8
	if testing.Short() {
		t.Skip("10,000 durable writes")
	}
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "dir/", "a.txt: alpha", "b.txt: beta\r\n")
	paths := []string{"a.txt", "b.txt", "c.txt", "dir", "nested/deep/d.txt", "dir/e.txt"}
	targets := make([]fs.Target, len(paths))
	for i, p := range paths {
		targets[i] = resolve(t, f, p)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[string]int{}
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range total / workers {
				tg := targets[rng.IntN(len(targets))]
				err := mutate(f, rng, tg, i)
				mu.Lock()
				outcomes[string(fs.CodeOf(err))]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("outcomes by code (\"\" = success): %v", outcomes)
	assert.Empty(t, fixture.Residue(t, dir), "staging residue")
	assert.Zero(t, fsbackend.LockTableSize(f), "lock table entries")
	assert.Greater(t, outcomes[""], total/10, "a fair share succeeded")
	assert.Greater(t, total-outcomes[""], total/10, "a fair share failed")
	for code := range outcomes {
		assert.NotEqual(t, fs.CodeIOError, code, "no I/O errors")
	}
}

func mutate(f *fslocal.FileSystem, rng *rand.Rand, tg fs.Target, i int) error {
	ctx := context.Background()
	var v fs.Version
	if info, err := f.Stat(ctx, tg); err == nil && info != nil && rng.IntN(4) > 0 {
		v = info.Version
	}
	switch rng.IntN(5) {
	case 0:
		_, err := f.WriteText(ctx, tg, fmt.Sprintf("alpha %d\n", i), fs.WriteOptions{})
		return err
	case 1:
		_, err := f.WriteText(ctx, tg, "alpha created\n", fs.WriteOptions{Intent: fs.CreateOnly()})
		return err
	case 2:
		_, err := f.WriteText(ctx, tg, fmt.Sprintf("alpha %d\r\n", i), fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: v})})
		return err
	case 3:
		_, err := f.EditText(ctx, tg, fs.EditRequest{OldString: "alpha", NewString: "alpha", Version: v})
		return err
	default:
		ctx, cancel := context.WithCancel(ctx)
		if rng.IntN(2) == 0 {
			cancel()
		}
		defer cancel()
		_, err := f.EditText(ctx, tg, fs.EditRequest{OldString: "missing", NewString: "x"})
		return err
	}
}

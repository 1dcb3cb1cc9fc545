//go:build linux

package search_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/search"
)

// nameGate skips the entries named skip and refuses, once opened, the
// directories and files whose path ends in refuse; it records every path
// Refuse (roots) and RefuseEntry (entries) were shown.
type nameGate struct {
	skip, refuse string
	mu           sync.Mutex
	shown        []string
	roots        []string
}

func (g *nameGate) Skip(abs string, _ bool) bool { return filepath.Base(abs) == g.skip }

func (g *nameGate) Refuse(_ int, _ *unix.Stat_t, abs string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.roots = append(g.roots, abs)
	return strings.HasSuffix(abs, g.refuse)
}

func (g *nameGate) RefuseEntry(_ int, _ *unix.Stat_t, abs string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shown = append(g.shown, abs)
	return strings.HasSuffix(abs, g.refuse)
}

// TestWalkGate: a skipped entry is never opened nor yielded, a refused
// directory is not entered and a refused file not scanned, both counted in
// Denied; a refused walk root, or a refused single file, is ErrDenied.
func TestWalkGate(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, root, "a.txt: key", "skipme/b.txt: key", "refused/c.txt: key", "d/e.txt: key", "d/refused.txt: key")
	ctx := context.Background()

	gate := &nameGate{skip: "skipme", refuse: "refused"}
	got, stats := walked(t, root, search.WalkOptions{Gate: gate})
	assert.Equal(t, []string{"a.txt", "d/e.txt", "d/refused.txt"}, got, "the walk yields files; the scan decides them")
	assert.Equal(t, 2, stats.Denied, "skipme skipped, refused/ refused once opened")
	assert.NotContains(t, gate.shown, filepath.Join(root, "skipme"), "a skipped entry is never opened")
	assert.Equal(t, []string{root}, gate.roots, "the walk root gets the whole decision, entries the entry's")
	assert.Contains(t, gate.shown, filepath.Join(root, "d"))

	res, err := search.Grep(ctx, root, search.GrepOptions{Pattern: "key", Walk: search.WalkOptions{Gate: &nameGate{skip: "skipme", refuse: "refused.txt"}}})
	require.NoError(t, err)
	var files []string
	for _, f := range res.Files {
		files = append(files, f.Path)
	}
	assert.Equal(t, []string{"a.txt", "d/e.txt", "refused/c.txt"}, files)
	assert.Equal(t, 2, res.Stats.Denied, "skipme skipped, d/refused.txt refused once opened")

	single := &nameGate{refuse: "refused.txt"}
	_, err = search.Grep(ctx, filepath.Join(root, "d", "refused.txt"), search.GrepOptions{Pattern: "key", Walk: search.WalkOptions{Gate: single}})
	assert.True(t, errors.Is(err, search.ErrDenied), "%v", err)
	assert.Equal(t, []string{filepath.Join(root, "d", "refused.txt")}, single.roots, "a file searched alone gets the whole decision")
	_, err = search.Grep(ctx, filepath.Join(root, "refused"), search.GrepOptions{Pattern: "key", Walk: search.WalkOptions{Gate: &nameGate{refuse: "refused"}}})
	assert.True(t, errors.Is(err, search.ErrDenied), "%v", err)
	_, err = search.Glob(ctx, filepath.Join(root, "refused"), search.GlobOptions{Pattern: "*", Walk: search.WalkOptions{Gate: &nameGate{refuse: "refused"}}})
	assert.True(t, errors.Is(err, search.ErrDenied), "%v", err)
}

// TestGrepNeverOpensASwappedSymlink: while a goroutine exchanges a listed
// file and a listed directory with symlinks (to a file and a directory
// beneath the root holding "secret"), greps over the root loop: an entry
// is opened without following a symlink anywhere on its path, so the
// secret is never scanned, and the gate is never shown the symlinks'
// destinations.
func TestGrepNeverOpensASwappedSymlink(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, root, "f: plain", "d/f: plain", ".hide/secret: secret", ".hide/d/f: secret",
		"f.swap => .hide/secret", "d.swap => .hide/d")
	ctx := context.Background()
	stop := make(chan struct{})
	var swapper sync.WaitGroup
	defer swapper.Wait()
	defer close(stop)
	swapper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, name := range []string{"f", "d"} {
				a, b := filepath.Join(root, name), filepath.Join(root, name+".swap")
				if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
			}
		}
	})
	gate := &nameGate{refuse: "\x00none"}
	plain := 0
	for range 500 {
		res, err := search.Grep(ctx, root, search.GrepOptions{Pattern: "plain|secret", Mode: search.ModeContent, Walk: search.WalkOptions{Gate: gate}})
		require.NoError(t, err)
		for _, f := range res.Files {
			for _, l := range f.Lines {
				assert.NotEqual(t, "secret", l.Text, "%s was read through a symlink", f.Path)
				plain++
			}
		}
	}
	assert.Positive(t, plain, "the plain files were searched")
	for _, abs := range gate.shown {
		assert.NotContains(t, abs, ".hide", "the walk never reached the hidden directory")
	}
}

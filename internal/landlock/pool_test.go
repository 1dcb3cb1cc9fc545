//go:build linux

package landlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/landlock"
)

// settle bounds the polling for threads the runtime terminates
// asynchronously after their goroutine exits.
const settle = 10 * time.Second

// tids records the thread IDs that served calls.
type tids struct {
	mu  sync.Mutex
	set map[int]bool
}

func (r *tids) add() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set = map[int]bool{}
	}
	r.set[unix.Gettid()] = true
}

func (r *tids) list() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, 0, len(r.set))
	for tid := range r.set {
		out = append(out, tid)
	}
	return out
}

// requireGone waits until none of the threads is alive.
func requireGone(t *testing.T, threads []int) {
	t.Helper()
	require.NotEmpty(t, threads)
	require.Eventually(t, func() bool {
		for _, tid := range threads {
			if taskAlive(tid) {
				return false
			}
		}
		return true
	}, settle, time.Millisecond, "restricted threads %v still alive", threads)
}

// TestManySets runs many concurrent calls on four disjoint root sets with
// room for only two sets at a time, so sets are evicted and recreated under
// load. Each call's write into its own root lands; its write into the next
// set's root is refused: domains never mix.
func TestManySets(t *testing.T) {
	const sets, goroutines, calls = 4, 6, 25
	roots := dirs(t, "a", "b", "c", "d")
	ex := newExecutor(t, landlock.Config{ThreadsPerSet: 2, MaxSets: 2})

	var wg sync.WaitGroup
	errs := make(chan error, sets*goroutines*calls)
	for s := range sets {
		own, other := roots[s], roots[(s+1)%sets]
		for g := range goroutines {
			wg.Go(func() {
				for c := range calls {
					name := fmt.Sprintf("f-%d-%d", g, c)
					errs <- ex.Run(context.Background(), []string{own}, func() error {
						if err := create(own, name, own); err != nil {
							return err
						}
						// A name no one creates: EEXIST would come before
						// the domain's check.
						if err := create(other, "from-"+filepath.Base(own)+"-"+name, own); !errors.Is(err, unix.EACCES) {
							return fmt.Errorf("write into %s from %s's domain: want EACCES, got %w", other, own, err)
						}
						return nil
					})
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		assert.Len(t, entries, goroutines*calls, "files in %s", root)
		for _, e := range entries {
			assert.Equal(t, root, readText(t, filepath.Join(root, e.Name())), "%s written by its own set only", e.Name())
		}
	}
}

// TestThreadsPerSet: at most ThreadsPerSet calls of one set run at once, on
// at most that many threads.
func TestThreadsPerSet(t *testing.T) {
	root := dirs(t, "root")[0]
	ex := newExecutor(t, landlock.Config{ThreadsPerSet: 2})
	var (
		running, peak atomic.Int32
		served        tids
		wg            sync.WaitGroup
	)
	for range 40 {
		wg.Go(func() {
			assert.NoError(t, ex.Run(context.Background(), []string{root}, func() error {
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				served.add()
				runtime.Gosched()
				time.Sleep(time.Millisecond)
				running.Add(-1)
				return nil
			}))
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, peak.Load(), int32(2))
	assert.LessOrEqual(t, len(served.list()), 2)
}

// TestEvictionEndsThreads: a call on a third set when MaxSets is 2 evicts the
// least recently used idle set, whose threads exit; Close ends the rest.
func TestEvictionEndsThreads(t *testing.T) {
	roots := dirs(t, "a", "b", "c")
	ex, err := landlock.New(landlock.Config{ThreadsPerSet: 1, MaxSets: 2, IdleTimeout: time.Hour})
	require.NoError(t, err)
	served := make([]tids, 3)
	run := func(i int) {
		require.NoError(t, ex.Run(context.Background(), roots[i:i+1], func() error { served[i].add(); return nil }))
	}
	run(0)
	run(1)
	run(1)
	run(2) // evicts set 0, the least recently used
	requireGone(t, served[0].list())
	for _, tid := range append(served[1].list(), served[2].list()...) {
		assert.True(t, taskAlive(tid), "thread %d of a set still held", tid)
	}
	require.NoError(t, ex.Close())
	requireGone(t, append(served[1].list(), served[2].list()...))
	require.ErrorIs(t, ex.Run(context.Background(), roots[:1], func() error { return nil }), landlock.ErrClosed)
	require.NoError(t, ex.Close(), "a second Close does nothing")
}

// TestIdleThreadsExit: threads exit after IdleTimeout without work, and the
// set serves later calls on new threads.
func TestIdleThreadsExit(t *testing.T) {
	root := dirs(t, "root")[0]
	ex := newExecutor(t, landlock.Config{IdleTimeout: 20 * time.Millisecond})
	var first, second tids
	require.NoError(t, ex.Run(context.Background(), []string{root}, func() error { first.add(); return nil }))
	requireGone(t, first.list())
	require.NoError(t, ex.Run(context.Background(), []string{root}, func() error {
		second.add()
		return create(root, "after", "x")
	}))
	assert.Equal(t, "x", readText(t, filepath.Join(root, "after")))
	assert.NotEqual(t, first.list(), second.list())
}

// TestNoThreadLeak: executors created, used on several sets and closed, again
// and again, leave the process's thread count where it was.
func TestNoThreadLeak(t *testing.T) {
	roots := dirs(t, "a", "b", "c")
	before := taskCount(t)
	var all tids
	for range 20 {
		ex, err := landlock.New(landlock.Config{ThreadsPerSet: 2})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				assert.NoError(t, ex.Run(context.Background(), roots[i%3:i%3+1], func() error {
					all.add()
					time.Sleep(time.Millisecond)
					return nil
				}))
			})
		}
		wg.Wait()
		require.NoError(t, ex.Close())
	}
	assert.NotContains(t, all.list(), os.Getpid(), "the main thread, which the runtime never terminates, is never restricted")
	requireGone(t, all.list())
	// Other threads the runtime started meanwhile (to run goroutines while
	// workers held theirs) may stay; restricted ones may not.
	after := taskCount(t)
	t.Logf("threads: %d before, %d after; %d restricted threads served and ended", before, after, len(all.list()))
	assert.LessOrEqual(t, after, before+runtime.GOMAXPROCS(0)+2)
}

// TestPanicAndGoexit: a panic becomes the call's error and a Goexit is
// reported; either way the set keeps serving calls, confined.
func TestPanicAndGoexit(t *testing.T) {
	d := dirs(t, "root", "outside")
	root, outside := d[0], d[1]
	ex := newExecutor(t, landlock.Config{ThreadsPerSet: 1})
	sentinel := errors.New("sentinel")
	tests := []struct {
		name  string
		fn    func() error
		check func(t *testing.T, err error)
	}{
		{"panic with a value", func() error { panic("boom") }, func(t *testing.T, err error) {
			require.ErrorContains(t, err, "panicked: boom")
		}},
		{"panic with an error", func() error { panic(sentinel) }, func(t *testing.T, err error) {
			require.ErrorIs(t, err, sentinel)
		}},
		{"runtime.Goexit", func() error { runtime.Goexit(); return nil }, func(t *testing.T, err error) {
			require.ErrorContains(t, err, "Goexit")
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, ex.Run(context.Background(), []string{root}, tc.fn))
			name := fmt.Sprintf("after-%d", i)
			require.NoError(t, ex.Run(context.Background(), []string{root}, func() error {
				if err := create(outside, name, "x"); !errors.Is(err, unix.EACCES) {
					return fmt.Errorf("outside write: want EACCES, got %w", err)
				}
				return create(root, name, "x")
			}))
			assert.Equal(t, "x", readText(t, filepath.Join(root, name)))
			assert.Equal(t, "<missing>", readText(t, filepath.Join(outside, name)))
		})
	}
}

// TestWaits: ctx bounds the wait for a thread (ThreadsPerSet busy) and for a
// set slot (MaxSets busy); the function of a call that gave up never runs.
func TestWaits(t *testing.T) {
	roots := dirs(t, "a", "b")
	ex := newExecutor(t, landlock.Config{ThreadsPerSet: 1, MaxSets: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- ex.Run(context.Background(), roots[:1], func() error { close(entered); <-release; return nil })
	}()
	<-entered

	for _, r := range [][]string{roots[:1], roots[1:]} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		ran := false
		err := ex.Run(ctx, r, func() error { ran = true; return nil })
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "roots %v", r)
		assert.False(t, ran)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	require.ErrorIs(t, ex.Run(cancelled, roots[1:], func() error { ran = true; return nil }), context.Canceled)
	assert.False(t, ran, "a call whose context is already done never runs")

	// A call waiting for the set slot proceeds once the holder returns.
	waiting := make(chan error, 1)
	go func() {
		waiting <- ex.Run(context.Background(), roots[1:], func() error { return create(roots[1], "later", "x") })
	}()
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-waiting)
	assert.Equal(t, "x", readText(t, filepath.Join(roots[1], "later")))
}

// TestRoots: roots are validated before any thread is touched; a root that
// cannot be opened as a directory without symlinks fails the call before fn
// runs; no roots at all grant no write.
func TestRoots(t *testing.T) {
	d := dirs(t, "root", "other")
	root, other := d[0], d[1]
	require.NoError(t, os.Symlink(root, filepath.Join(other, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(other, "file"), nil, 0o644))
	ex := newExecutor(t, landlock.Config{})
	tests := []struct {
		name  string
		roots []string
		want  error
	}{
		{"relative", []string{"root"}, unix.EINVAL},
		{"not clean", []string{root + "/../root"}, unix.EINVAL},
		{"trailing slash", []string{root + "/"}, unix.EINVAL},
		{"NUL byte", []string{root + "\x00x"}, unix.EINVAL},
		{"empty", []string{""}, unix.EINVAL},
		{"missing", []string{filepath.Join(other, "missing")}, unix.ENOENT},
		{"a symlink", []string{filepath.Join(other, "link")}, unix.ELOOP},
		{"a file", []string{filepath.Join(other, "file")}, unix.ENOTDIR},
		{"one bad among good", []string{root, filepath.Join(other, "missing")}, unix.ENOENT},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			err := ex.Run(context.Background(), tc.roots, func() error { ran = true; return nil })
			require.ErrorIs(t, err, tc.want)
			assert.False(t, ran)
		})
	}

	t.Run("none grants no write", func(t *testing.T) {
		err := ex.Run(context.Background(), nil, func() error { return create(root, "none", "x") })
		require.ErrorIs(t, err, unix.EACCES)
		assert.Equal(t, "<missing>", readText(t, filepath.Join(root, "none")))
	})

	t.Run("order and duplicates do not matter", func(t *testing.T) {
		require.NoError(t, ex.Run(context.Background(), []string{other, root, other}, func() error {
			if err := create(root, "r", "x"); err != nil {
				return err
			}
			return create(other, "o", "x")
		}))
		assert.Equal(t, "x", readText(t, filepath.Join(root, "r")))
		assert.Equal(t, "x", readText(t, filepath.Join(other, "o")))
	})
}

func TestNewConfig(t *testing.T) {
	for _, cfg := range []landlock.Config{{ThreadsPerSet: -1}, {MaxSets: -1}, {IdleTimeout: -time.Second}} {
		_, err := landlock.New(cfg)
		require.ErrorIs(t, err, unix.EINVAL, "%+v", cfg)
	}
	ex := newExecutor(t, landlock.Config{})
	abi, err := landlock.ABI()
	require.NoError(t, err)
	assert.Equal(t, abi, ex.ABI())
}

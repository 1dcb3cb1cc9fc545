//go:build linux

package atomicwrite

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// waitingIn returns how many calls are in Sync for p's directory.
func (s *DirSyncs) waitingIn(t *testing.T, p *dirfd.Parent) int {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(p.FD(), &st))
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.dirs[[2]uint64{st.Dev, st.Ino}]; d != nil {
		return d.refs
	}
	return 0
}

// waitFor blocks until cond holds, yielding meanwhile. It bounds nothing by
// time: the test's own timeout does.
func waitFor(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// Group commit: writes that publish while a directory fsync runs share the
// next one, which starts after that fsync ends; none returns before an fsync
// that started after its publication has ended.
func TestDirSyncs_GroupCommit(t *testing.T) {
	dir := t.TempDir()
	rel, _ := dirfd.Host().Rel(dir)
	var (
		syncs    DirSyncs
		started  = make(chan int, 8)
		release  = make(chan struct{}, 8)
		count    atomic.Int32
		returned atomic.Int32
	)
	syncs.fsync = func(p *dirfd.Parent) error {
		n := int(count.Add(1))
		started <- n
		<-release
		return p.Sync()
	}
	open := func() *dirfd.Parent {
		p, _, err := dirfd.Host().OpenParent(rel, false)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	first := open()
	var wg sync.WaitGroup
	wg.Go(func() {
		assert.NoError(t, syncs.Sync(first))
		returned.Add(1)
	})
	require.Equal(t, 1, <-started, "the first write leads an fsync")

	// Four writes publish while that fsync runs: they must wait for the
	// next one, and share it. Each has its own descriptor on the directory.
	const later = 4
	for range later {
		p := open()
		wg.Go(func() {
			assert.NoError(t, syncs.Sync(p))
			returned.Add(1)
		})
	}
	waitFor(func() bool { return syncs.waitingIn(t, first) == 1+later })
	assert.Zero(t, returned.Load(), "nothing returns before its fsync ends")

	release <- struct{}{} // the first fsync ends
	require.Equal(t, 2, <-started, "one more fsync covers the four")
	waitFor(func() bool { return returned.Load() == 1 })
	assert.EqualValues(t, 1, returned.Load(), "only the first write is covered by the first fsync")

	release <- struct{}{}
	wg.Wait()
	assert.EqualValues(t, 2, count.Load(), "five writes, two directory fsyncs")
	assert.EqualValues(t, 1+later, returned.Load())
	assert.Zero(t, syncs.waitingIn(t, first), "no state is kept for an idle directory")
}

// Durability: Full fsyncs the directory through DirSyncs once per write;
// Atomic never does.
func TestWrite_Durability(t *testing.T) {
	for _, c := range []struct {
		name string
		d    Durability
		want int32
	}{
		{"full", Full, 1},
		{"atomic", Atomic, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachParent(t, []string{"b.txt: old"}, func(t *testing.T, e env) {
				var syncs DirSyncs
				var count atomic.Int32
				syncs.fsync = func(*dirfd.Parent) error { count.Add(1); return nil }
				for _, pb := range publications {
					count.Store(0)
					_, err := Write(context.Background(), Request{
						Parent: e.p, Name: pb.name + ".txt", Content: "x", Publication: pb.pub,
						Durability: c.d, Syncs: &syncs, noUnnamed: e.staged,
					})
					require.NoError(t, err)
					assert.Equal(t, c.want, count.Load())
					assertFile(t, filepath.Join(e.dir, pb.name+".txt"), "x", newPerm)
				}
				_, err := Write(context.Background(), Request{
					Parent: e.p, Name: "b.txt", Content: "new", Durability: c.d, Syncs: &syncs, noUnnamed: e.staged,
				})
				require.NoError(t, err)
				b, err := os.ReadFile(filepath.Join(e.dir, "b.txt"))
				require.NoError(t, err)
				assert.Equal(t, "new", string(b))
				noResidue(t, e)
			})
		})
	}
}

package atomicwrite

import (
	"sync"

	"github.com/dsh-go/harness/internal/dirfd"
)

// DirSyncs shares directory fsyncs among the writes that publish into one
// directory at once (group commit): a write waits for an fsync of its
// directory that started after its publication, and one such fsync covers
// every write published before it started. While an fsync runs, the writes
// that arrive join the next one, which starts when it ends. The zero value
// is ready to use; it is safe for concurrent use. A nil *DirSyncs fsyncs
// each directory alone.
type DirSyncs struct {
	mu   sync.Mutex
	dirs map[[2]uint64]*dirSync
	// fsync, when set (tests), replaces the directory fsync.
	fsync func(p *dirfd.Parent) error
}

// dirSync is the state of one directory: whether an fsync runs, and the
// batch of writes waiting for the next one.
type dirSync struct {
	cond    sync.Cond
	refs    int  // writes in Sync for this directory
	running bool // an fsync is in flight
	next    *batch
}

// batch is the set of writes one fsync covers, and its result.
type batch struct {
	done bool
	err  error
}

// Sync returns once an fsync of p's directory that started after the call
// has completed, with that fsync's error. Errors are *os.PathError.
func (s *DirSyncs) Sync(p *dirfd.Parent) error {
	if s == nil {
		return p.Sync()
	}
	key, err := p.Identity()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirs == nil {
		s.dirs = map[[2]uint64]*dirSync{}
	}
	d := s.dirs[key]
	if d == nil {
		d = &dirSync{}
		d.cond.L = &s.mu
		s.dirs[key] = d
	}
	d.refs++
	defer func() {
		if d.refs--; d.refs == 0 {
			delete(s.dirs, key)
		}
	}()
	if d.next == nil {
		d.next = &batch{}
	}
	b := d.next
	for d.running && !b.done {
		d.cond.Wait()
	}
	if b.done {
		return b.err
	}
	// No fsync runs and b's has not started: b is still d.next, and this
	// write leads it. Its members all joined before this point.
	d.running, d.next = true, nil
	s.mu.Unlock()
	err = s.syncDir(p)
	s.mu.Lock()
	b.done, b.err = true, err
	d.running = false
	d.cond.Broadcast()
	return err
}

func (s *DirSyncs) syncDir(p *dirfd.Parent) error {
	if s.fsync != nil {
		return s.fsync(p)
	}
	return p.Sync()
}

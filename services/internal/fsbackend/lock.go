package fsbackend

import (
	"context"
	"sync"

	"github.com/dsh-go/harness/services/fs"
)

// lockTable serializes mutations per target key within the process (Z-7).
// An entry lives only while someone holds or waits for it, so the table never
// leaks (L-75).
type lockTable struct {
	mu sync.Mutex
	m  map[fs.TargetKey]*lockEntry
}

type lockEntry struct {
	sem  chan struct{} // capacity 1: holding the lock is having sent
	refs int           // holders and waiters
}

// lock waits for key's lock, or for ctx to end; it returns the unlock func.
func (l *lockTable) lock(ctx context.Context, key fs.TargetKey) (func(), error) {
	l.mu.Lock()
	e := l.m[key]
	if e == nil {
		e = &lockEntry{sem: make(chan struct{}, 1)}
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	select {
	case e.sem <- struct{}{}:
		return func() {
			<-e.sem
			l.release(key, e)
		}, nil
	case <-ctx.Done():
		l.release(key, e)
		return nil, ctx.Err()
	}
}

func (l *lockTable) release(key fs.TargetKey, e *lockEntry) {
	l.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(l.m, key)
	}
	l.mu.Unlock()
}

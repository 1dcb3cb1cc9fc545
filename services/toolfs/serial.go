package toolfs

import (
	"context"
	"sync"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// serial runs a session's calls on one target one after another: a read,
// write or edit holds its (session, target) turn from before its intent is
// decided until its observation is recorded. So a session's parallel calls
// on one file never go stale on each other, each deciding on the
// observation the previous one recorded, while the backend still checks
// that basis under the target's lock and catches a change made by anyone
// else (issue 13, item 11; supersedes T-81). Calls with no session, and
// calls of different sessions or targets, never wait here. An entry lives
// only while someone holds or waits for it. The zero value is ready to use.
type serial struct {
	mu sync.Mutex
	m  map[serialKey]*serialEntry
}

type serialKey struct {
	owner *sandbox.Owner
	key   fs.TargetKey
}

type serialEntry struct {
	turn chan struct{} // capacity 1: holding the turn is having sent
	refs int           // holders and waiters
}

// acquire waits for owner's turn on target, or for ctx to end (an *fs.Error
// with CodeAborted and op), and returns the func that ends the turn. A nil
// owner never waits.
func (s *serial) acquire(ctx context.Context, op string, owner *sandbox.Owner, target fs.Target) (func(), error) {
	if owner == nil {
		return func() {}, nil
	}
	k := serialKey{owner: owner, key: target.Key}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[serialKey]*serialEntry{}
	}
	e := s.m[k]
	if e == nil {
		e = &serialEntry{turn: make(chan struct{}, 1)}
		s.m[k] = e
	}
	e.refs++
	s.mu.Unlock()
	select {
	case e.turn <- struct{}{}:
		return func() {
			<-e.turn
			s.release(k, e)
		}, nil
	case <-ctx.Done():
		s.release(k, e)
		return nil, &fs.Error{Code: fs.CodeAborted, Op: op, Path: target.DisplayPath, Message: op + " aborted", Err: ctx.Err()}
	}
}

func (s *serial) release(k serialKey, e *serialEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(s.m, k)
	}
}

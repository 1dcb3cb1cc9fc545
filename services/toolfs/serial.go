package toolfs

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// serial runs a session's calls on one target one after another: a read,
// write, edit, mkdir, delete or move holds its (session, target) turn (a
// move both its source's and its destination's) from before its intent is
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

// acquireAll takes owner's turns on every target in a fixed order, by key
// (a key given twice is taken once), so two calls that need the same turns
// never wait on each other in a cycle; it returns the func that ends them
// all. On ctx's end the turns taken are given back and the error is
// acquire's.
func (s *serial) acquireAll(ctx context.Context, op string, owner *sandbox.Owner, targets ...fs.Target) (func(), error) {
	sorted := slices.Clone(targets)
	slices.SortFunc(sorted, func(a, b fs.Target) int { return strings.Compare(string(a.Key), string(b.Key)) })
	sorted = slices.CompactFunc(sorted, func(a, b fs.Target) bool { return a.Key == b.Key })
	dones := make([]func(), 0, len(sorted))
	release := func() {
		for _, done := range slices.Backward(dones) {
			done()
		}
	}
	for _, target := range sorted {
		done, err := s.acquire(ctx, op, owner, target)
		if err != nil {
			release()
			return nil, err
		}
		dones = append(dones, done)
	}
	return release, nil
}

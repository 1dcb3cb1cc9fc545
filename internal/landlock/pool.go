package landlock

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// set is the pool of threads restricted to one root set.
type set struct {
	key   string
	roots []string
	jobs  chan *job     // unbuffered: a send succeeds only into an idle worker
	slots chan struct{} // one token per live worker; capacity ThreadsPerSet
	quit  chan struct{} // closed when the set is evicted or the executor closed

	// Guarded by Executor.mu.
	users    int       // Run calls holding the set
	lastUsed time.Time // when the last user released it
}

// job is one call of Run.
type job struct {
	fn   func() error
	done chan error // buffered: the worker never blocks on it
}

// acquire returns the set for key, creating it, and counts the caller as a
// user until release. When MaxSets sets exist it evicts the least recently
// used idle one, or waits until one becomes idle.
func (e *Executor) acquire(ctx context.Context, key string, roots []string) (*set, error) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, ErrClosed
		}
		s, ok := e.sets[key]
		if !ok && len(e.sets) >= e.cfg.MaxSets {
			e.evictIdle()
		}
		if !ok && len(e.sets) < e.cfg.MaxSets {
			s = &set{
				key:   key,
				roots: roots,
				jobs:  make(chan *job),
				slots: make(chan struct{}, e.cfg.ThreadsPerSet),
				quit:  make(chan struct{}),
			}
			e.sets[key] = s
			ok = true
		}
		if ok {
			s.users++
			e.users++
			e.mu.Unlock()
			return s, nil
		}
		// Every set is in use: wait for a release.
		freed := e.freed
		e.waiters++
		e.mu.Unlock()
		select {
		case <-freed:
			e.mu.Lock()
			e.waiters--
			e.mu.Unlock()
		case <-ctx.Done():
			e.mu.Lock()
			e.waiters--
			e.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

// evictIdle forgets the least recently used set that has no user and tells
// its threads to exit. e.mu is held.
func (e *Executor) evictIdle() {
	var victim *set
	for _, s := range e.sets {
		if s.users == 0 && (victim == nil || s.lastUsed.Before(victim.lastUsed)) {
			victim = s
		}
	}
	if victim != nil {
		close(victim.quit)
		delete(e.sets, victim.key)
	}
}

// release ends the caller's use of s.
func (e *Executor) release(s *set) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.users--
	e.users--
	s.lastUsed = time.Now()
	if s.users == 0 && e.waiters > 0 {
		close(e.freed)
		e.freed = make(chan struct{})
	}
	e.checkDrained()
}

// submit hands j to an idle worker of s, or starts a worker for it while s
// has fewer than ThreadsPerSet, or waits for either; then waits for j's
// result. ctx bounds only the wait before j is handed over.
func (e *Executor) submit(ctx context.Context, s *set, j *job) error {
	select {
	case s.jobs <- j:
		return <-j.done
	default:
	}
	select {
	case s.jobs <- j:
	case s.slots <- struct{}{}:
		e.mu.Lock()
		e.live++
		e.mu.Unlock()
		go e.work(s, j, nil)
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-j.done
}

// work is a worker: it locks its goroutine to its thread for good, restricts
// the thread to s's roots, runs first and then every job it receives, and
// exits when idle for IdleTimeout or when s is evicted. Exiting while locked
// makes the runtime terminate the thread (see the package doc). locked, when
// not nil, is closed once the thread is locked.
func (e *Executor) work(s *set, first *job, locked chan<- struct{}) {
	runtime.LockOSThread() // never unlocked, except on the main thread below
	if onMainThread() {
		// The main thread: the runtime never terminates it (it parks it for
		// good instead), so restricted it would outlive the worker. Hold it
		// while a new worker locks another thread (a locked thread runs only
		// its own goroutine, so not this one), then give it back untouched.
		relayed := make(chan struct{})
		go e.work(s, first, relayed)
		<-relayed
		runtime.UnlockOSThread()
		return
	}
	if locked != nil {
		close(locked)
	}
	cur := first
	defer e.exited(s)
	defer func() {
		// Reached with a job in hand only when its function called
		// runtime.Goexit: report it rather than leave Run waiting.
		if cur != nil {
			cur.done <- errGoexit
		}
	}()
	if err := restrictSelf(s.roots, e.handled); err != nil {
		cur.done <- err
		cur = nil
		return
	}
	idle := time.NewTimer(e.cfg.IdleTimeout)
	defer idle.Stop()
	for {
		cur.done <- cur.run()
		cur = nil
		idle.Reset(e.cfg.IdleTimeout)
		select {
		case cur = <-s.jobs:
		case <-idle.C:
			return
		case <-s.quit:
			return
		}
	}
}

// run calls j.fn, turning a panic into an error.
func (j *job) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			if perr, ok := r.(error); ok {
				err = fmt.Errorf("landlock: the confined function panicked: %w", perr)
			} else {
				err = fmt.Errorf("landlock: the confined function panicked: %v", r)
			}
		}
	}()
	return j.fn()
}

// exited accounts for a worker of s that is exiting: it frees its slot, and
// forgets s when that was its last thread and nobody uses it.
func (e *Executor) exited(s *set) {
	<-s.slots
	e.mu.Lock()
	defer e.mu.Unlock()
	e.live--
	if s.users == 0 && len(s.slots) == 0 && e.sets[s.key] == s {
		delete(e.sets, s.key)
	}
	e.checkDrained()
}

// checkDrained closes e.drained once Close was called and no call or worker
// remains. e.mu is held.
func (e *Executor) checkDrained() {
	if e.closed && e.users == 0 && e.live == 0 {
		select {
		case <-e.drained:
		default:
			close(e.drained)
		}
	}
}

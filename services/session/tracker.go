package session

import (
	"errors"
	"sync"

	"go.uber.org/fx"
)

// Tracker starts the sessions of a process and knows the live ones, so that
// a check can look at every session, present and future: it tells its
// observers of every event appended to any session it started. It is safe
// for concurrent use.
type Tracker struct {
	observers observers
	mu        sync.Mutex // guards live
	live      map[*Session]struct{}
}

// NewTracker returns a tracker with no sessions.
func NewTracker() *Tracker { return &Tracker{live: map[*Session]struct{}{}} }

// Start returns a new tracked session (see New). Events given here are the
// session's history and are not told to observers; use Resume for that.
func (t *Tracker) Start(id, cwd string, events ...Event) *Session {
	s := New(id, cwd, events...)
	s.tracker = t
	t.mu.Lock()
	t.live[s] = struct{}{}
	t.mu.Unlock()
	return s
}

// Resume starts a tracked session recreated from events (spec P-16) and
// tells the tracker's observers of each of them, as if appended now, so a
// check registered before the resume sees them too. It returns the session,
// tracked in any case, and the observers' errors, joined.
func (t *Tracker) Resume(id, cwd string, events ...Event) (*Session, error) {
	s := t.Start(id, cwd, events...)
	var errs []error
	for _, e := range events {
		errs = append(errs, t.observers.notify(s, e))
	}
	return s, errors.Join(errs...)
}

// End stops tracking s (its events still reach the tracker's observers)
// and ends it: s.Done is closed. Ending a session twice is harmless.
func (t *Tracker) End(s *Session) {
	t.mu.Lock()
	delete(t.live, s)
	t.mu.Unlock()
	s.end()
}

// Sessions returns the live sessions, in no particular order.
func (t *Tracker) Sessions() []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Session, 0, len(t.live))
	for s := range t.live {
		out = append(out, s)
	}
	return out
}

// Observe registers fn for every event appended from now on to any session
// the tracker started, and returns the func that unregisters it.
func (t *Tracker) Observe(fn Observer) (cancel func()) { return t.observers.add(fn) }

// Module provides the process's *Tracker.
var Module = fx.Module("session", fx.Provide(NewTracker))

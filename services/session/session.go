// Package session is the small shared vocabulary of an agent session: an
// identity, an immutable working directory and an append-only event log.
// The sandbox policy folds the log's "sandbox/mode" events; the MCP server
// makes one session per connection.
package session

import (
	"errors"
	"slices"
	"sync"
)

// Event is one entry of a session's log. Type names the event (for example
// "sandbox/mode"); Data is the event's payload, owned by the package that
// defines the type.
type Event struct {
	Type string
	Data any
}

// Observer is told of every event appended to a session, synchronously, in
// log order, after it is recorded. It must not append to the same session
// (that would deadlock); it may read it. An error it returns is returned by
// Append (the event stays recorded): that is how a runtime invariant reports
// a malformed event to whoever appended it.
type Observer func(s *Session, e Event) error

// Session is one agent session. It is safe for concurrent use. Its ID and
// Cwd never change; events are only appended.
type Session struct {
	id  string
	cwd string

	deliver   sync.Mutex // serializes Append, so observers see log order
	tracker   *Tracker   // set when the session was started by a Tracker
	mu        sync.Mutex // guards the fields below
	events    []Event
	observers []observerEntry
	nextObs   int
}

type observerEntry struct {
	id int
	fn Observer
}

// New returns a session with the given id and working directory (an
// absolute path, or "" when the client gave none) and an empty log. Pass
// events to recreate a resumed session (spec P-16).
func New(id, cwd string, events ...Event) *Session {
	return &Session{id: id, cwd: cwd, events: slices.Clone(events)}
}

// ID returns the session's identity.
func (s *Session) ID() string { return s.id }

// Cwd returns the session's working directory, "" when it has none. It
// never changes for the life of the session.
func (s *Session) Cwd() string { return s.cwd }

// Append records e at the end of the log and tells every observer of the
// session, then every observer of its Tracker. It returns the observers'
// errors, joined; the event is recorded either way.
func (s *Session) Append(e Event) error {
	s.deliver.Lock()
	defer s.deliver.Unlock()
	s.mu.Lock()
	s.events = append(s.events, e)
	observers := slices.Clone(s.observers)
	s.mu.Unlock()
	var errs []error
	for _, o := range observers {
		errs = append(errs, o.fn(s, e))
	}
	if s.tracker != nil {
		errs = append(errs, s.tracker.notify(s, e))
	}
	return errors.Join(errs...)
}

// Events returns a copy of the log, oldest first.
func (s *Session) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Observe registers fn for events appended from now on and returns the func
// that unregisters it.
func (s *Session) Observe(fn Observer) (cancel func()) {
	s.mu.Lock()
	s.nextObs++
	id := s.nextObs
	s.observers = append(s.observers, observerEntry{id: id, fn: fn})
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.observers = slices.DeleteFunc(s.observers, func(o observerEntry) bool { return o.id == id })
	}
}

// Package session is an agent session: its owner (the identity and immutable
// working directory the seams see, a *sandbox.Owner) and an append-only
// event log. The sandbox policy folds the log's "sandbox/mode" events; the
// MCP server makes one session per connection.
package session

import (
	"errors"
	"slices"
	"sync"

	"github.com/dsh-go/harness/services/sandbox"
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
	owner *sandbox.Owner

	deliver   sync.Mutex // serializes Append, so observers see log order
	tracker   *Tracker   // set when the session was started by a Tracker
	observers observers
	mu        sync.Mutex // guards events
	events    []Event
	done      chan struct{} // closed by end
	endOnce   sync.Once
}

// New returns a session with the given id and working directory (an
// absolute path, or "" when the client gave none) and an empty log. Pass
// events to recreate a resumed session (spec P-16).
func New(id, cwd string, events ...Event) *Session {
	return &Session{owner: sandbox.NewOwner(id, cwd), events: slices.Clone(events), done: make(chan struct{})}
}

// Done returns a channel closed when the session ends (its Tracker's End):
// what a seam holding something for the session's life (the command
// runner's network namespace) waits on to let it go. A session not started
// by a Tracker never ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// end closes Done, once.
func (s *Session) end() { s.endOnce.Do(func() { close(s.done) }) }

// ID returns the session's identity.
func (s *Session) ID() string { return s.owner.ID() }

// Cwd returns the session's working directory, "" when it has none. It
// never changes for the life of the session.
func (s *Session) Cwd() string { return s.owner.Cwd() }

// Owner returns the session's owner, the key the seams keep per-session
// state under; it lives as long as the session. A nil session has a nil
// owner (a call with no session).
func (s *Session) Owner() *sandbox.Owner {
	if s == nil {
		return nil
	}
	return s.owner
}

// Append records e at the end of the log and tells every observer of the
// session, then every observer of its Tracker. It returns the observers'
// errors, joined; the event is recorded either way.
func (s *Session) Append(e Event) error {
	s.deliver.Lock()
	defer s.deliver.Unlock()
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	err := s.observers.notify(s, e)
	if s.tracker != nil {
		err = errors.Join(err, s.tracker.observers.notify(s, e))
	}
	return err
}

// Events returns a copy of the log, oldest first.
func (s *Session) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Observe registers fn for events appended from now on and returns the func
// that unregisters it.
func (s *Session) Observe(fn Observer) (cancel func()) { return s.observers.add(fn) }

// observers is a list of observers, each registered under its own id so the
// same function may be registered twice and cancelled independently. The
// zero value is empty and ready to use; it is safe for concurrent use.
type observers struct {
	mu    sync.Mutex
	list  []observerEntry
	maxID int
}

type observerEntry struct {
	id int
	fn Observer
}

// add registers fn and returns the func that unregisters it.
func (o *observers) add(fn Observer) (cancel func()) {
	o.mu.Lock()
	o.maxID++
	id := o.maxID
	o.list = append(o.list, observerEntry{id: id, fn: fn})
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.list = slices.DeleteFunc(o.list, func(e observerEntry) bool { return e.id == id })
	}
}

// notify tells every observer registered now of e in s, and returns their
// errors, joined.
func (o *observers) notify(s *Session, e Event) error {
	o.mu.Lock()
	list := slices.Clone(o.list)
	o.mu.Unlock()
	var errs []error
	for _, entry := range list {
		errs = append(errs, entry.fn(s, e))
	}
	return errors.Join(errs...)
}

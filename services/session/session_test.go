package session_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/session"
)

func ev(typ string, data any) session.Event { return session.Event{Type: typ, Data: data} }

// recorder is an Observer that keeps what it is told, safely.
type recorder struct {
	mu       sync.Mutex
	events   []session.Event
	sessions []*session.Session
}

func (r *recorder) observe(s *session.Session, e session.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.sessions = append(r.sessions, s)
	return nil
}

func (r *recorder) seen() []session.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func TestNewIdentity(t *testing.T) {
	tests := []struct {
		name string
		id   string
		cwd  string
	}{
		{name: "a session keeps its id and absolute cwd", id: "sess-1", cwd: "/projects/current"},
		{name: "P-08 a session may have no cwd", id: "sess-2", cwd: ""},
		{name: "the cwd is kept exactly as given, unresolved", id: "sess-3", cwd: "/projects/../projects/current/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := session.New(tc.id, tc.cwd)
			assert.Equal(t, tc.id, s.ID())
			assert.Equal(t, tc.cwd, s.Cwd())
			assert.Empty(t, s.Events(), "a new session has an empty log")

			require.NoError(t, s.Append(ev("sandbox/mode", "x")))
			require.NoError(t, s.Append(ev("chat/message", "y")))
			assert.Equal(t, tc.id, s.ID(), "the id never changes")
			assert.Equal(t, tc.cwd, s.Cwd(), "the cwd never changes")
		})
	}
}

func TestEvents(t *testing.T) {
	t.Run("Append records events in order, oldest first", func(t *testing.T) {
		s := session.New("s", "/w")
		want := []session.Event{ev("a", 1), ev("b", 2), ev("a", 3), ev("c", nil)}
		for _, e := range want {
			require.NoError(t, s.Append(e))
		}
		assert.Equal(t, want, s.Events())
	})

	t.Run("Events returns a copy: changing it does not change the log", func(t *testing.T) {
		s := session.New("s", "/w")
		require.NoError(t, s.Append(ev("a", 1)))
		require.NoError(t, s.Append(ev("b", 2)))
		got := s.Events()
		got[0] = ev("mutated", 0)
		assert.Equal(t, []session.Event{ev("a", 1), ev("b", 2)}, s.Events())
	})

	t.Run("appending after Events does not change an earlier copy", func(t *testing.T) {
		s := session.New("s", "/w")
		require.NoError(t, s.Append(ev("a", 1)))
		before := s.Events()
		require.NoError(t, s.Append(ev("b", 2)))
		assert.Equal(t, []session.Event{ev("a", 1)}, before)
	})

	t.Run("P-16 New with events starts the log with them, in order", func(t *testing.T) {
		prior := []session.Event{ev("sandbox/mode", "workspace-write"), ev("chat/message", "hi")}
		s := session.New("s", "/w", prior...)
		assert.Equal(t, prior, s.Events())
		require.NoError(t, s.Append(ev("next", 3)))
		assert.Equal(t, append(slices.Clone(prior), ev("next", 3)), s.Events())
	})

	t.Run("P-16 New copies the events: changing the caller's slice later does not change the log", func(t *testing.T) {
		prior := []session.Event{ev("a", 1), ev("b", 2)}
		s := session.New("s", "/w", prior...)
		prior[0] = ev("mutated", 0)
		assert.Equal(t, []session.Event{ev("a", 1), ev("b", 2)}, s.Events())
	})

	t.Run("P-16 a session recreated from another's Events has the same log and they then diverge", func(t *testing.T) {
		orig := session.New("s", "/w")
		require.NoError(t, orig.Append(ev("a", 1)))
		resumed := session.New(orig.ID(), orig.Cwd(), orig.Events()...)
		assert.Equal(t, orig.Events(), resumed.Events())
		require.NoError(t, resumed.Append(ev("b", 2)))
		assert.Equal(t, []session.Event{ev("a", 1)}, orig.Events())
		assert.Equal(t, []session.Event{ev("a", 1), ev("b", 2)}, resumed.Events())
	})
}

func TestObserve(t *testing.T) {
	t.Run("an observer receives only events appended after registration, in order, with the session", func(t *testing.T) {
		s := session.New("s", "/w", ev("resumed", 0))
		require.NoError(t, s.Append(ev("before", 1)))
		rec := &recorder{}
		cancel := s.Observe(rec.observe)
		defer cancel()
		require.NoError(t, s.Append(ev("after", 2)))
		require.NoError(t, s.Append(ev("after", 3)))
		require.NoError(t, s.Append(ev("other", 4)))
		assert.Equal(t, []session.Event{ev("after", 2), ev("after", 3), ev("other", 4)}, rec.seen())
		for _, got := range rec.sessions {
			assert.Same(t, s, got)
		}
	})

	t.Run("an observer is told synchronously, after the event is recorded", func(t *testing.T) {
		s := session.New("s", "/w")
		var logAtDelivery []session.Event
		cancel := s.Observe(func(obs *session.Session, _ session.Event) error { logAtDelivery = obs.Events(); return nil })
		defer cancel()
		require.NoError(t, s.Append(ev("a", 1)))
		assert.Equal(t, []session.Event{ev("a", 1)}, logAtDelivery, "Append returns after the observer ran, and the log already held the event")
	})

	t.Run("every observer is told, each in order", func(t *testing.T) {
		s := session.New("s", "/w")
		r1, r2 := &recorder{}, &recorder{}
		c1 := s.Observe(r1.observe)
		defer c1()
		c2 := s.Observe(r2.observe)
		defer c2()
		require.NoError(t, s.Append(ev("a", 1)))
		require.NoError(t, s.Append(ev("b", 2)))
		want := []session.Event{ev("a", 1), ev("b", 2)}
		assert.Equal(t, want, r1.seen())
		assert.Equal(t, want, r2.seen())
	})

	t.Run("cancel stops delivery to that observer only", func(t *testing.T) {
		s := session.New("s", "/w")
		r1, r2 := &recorder{}, &recorder{}
		c1 := s.Observe(r1.observe)
		c2 := s.Observe(r2.observe)
		defer c2()
		require.NoError(t, s.Append(ev("a", 1)))
		c1()
		require.NoError(t, s.Append(ev("b", 2)))
		assert.Equal(t, []session.Event{ev("a", 1)}, r1.seen())
		assert.Equal(t, []session.Event{ev("a", 1), ev("b", 2)}, r2.seen())
	})

	t.Run("cancel is idempotent and does not disturb a later registration", func(t *testing.T) {
		s := session.New("s", "/w")
		r1, r2 := &recorder{}, &recorder{}
		c1 := s.Observe(r1.observe)
		c1()
		c1()
		c2 := s.Observe(r2.observe)
		defer c2()
		c1()
		require.NoError(t, s.Append(ev("a", 1)))
		assert.Empty(t, r1.seen())
		assert.Equal(t, []session.Event{ev("a", 1)}, r2.seen())
	})

	t.Run("the same function registered twice is told twice and cancelled independently", func(t *testing.T) {
		s := session.New("s", "/w")
		rec := &recorder{}
		c1 := s.Observe(rec.observe)
		c2 := s.Observe(rec.observe)
		defer c2()
		require.NoError(t, s.Append(ev("a", 1)))
		c1()
		require.NoError(t, s.Append(ev("b", 2)))
		assert.Equal(t, []session.Event{ev("a", 1), ev("a", 1), ev("b", 2)}, rec.seen())
	})

	t.Run("an observer of one session is not told of another session's events", func(t *testing.T) {
		a, b := session.New("a", "/w"), session.New("b", "/w")
		rec := &recorder{}
		cancel := a.Observe(rec.observe)
		defer cancel()
		require.NoError(t, b.Append(ev("b", 1)))
		assert.Empty(t, rec.seen())
	})
}

func TestConcurrentAppend(t *testing.T) {
	const (
		writers   = 8
		perWriter = 200
	)
	type item struct{ writer, seq int }

	t.Run("concurrent Append from 8 goroutines loses nothing and keeps each writer's order", func(t *testing.T) {
		s := session.New("s", "/w")
		rec := &recorder{}
		cancel := s.Observe(rec.observe)
		defer cancel()

		var wg sync.WaitGroup
		stop := make(chan struct{})
		readerDone := make(chan struct{})
		go func() { // a concurrent reader, for the race detector
			defer close(readerDone)
			for {
				select {
				case <-stop:
					return
				default:
					_ = s.Events()
				}
			}
		}()
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					assert.NoError(t, s.Append(ev(fmt.Sprintf("w%d", w), item{w, i})))
				}
			})
		}
		wg.Wait()
		close(stop)
		<-readerDone

		events := s.Events()
		require.Len(t, events, writers*perWriter)
		next := make([]int, writers)
		for _, e := range events {
			it, ok := e.Data.(item)
			require.True(t, ok)
			assert.Equal(t, fmt.Sprintf("w%d", it.writer), e.Type)
			assert.Equal(t, next[it.writer], it.seq, "writer %d's events keep their order", it.writer)
			next[it.writer] = it.seq + 1
		}
		for w := range writers {
			assert.Equal(t, perWriter, next[w], "writer %d lost nothing", w)
		}
		seen := rec.seen()
		assert.Len(t, seen, writers*perWriter, "the observer was told of every event")
		assert.ElementsMatch(t, events, seen)
	})

	t.Run("concurrent Observe and cancel beside Append are race-free", func(t *testing.T) {
		s := session.New("s", "/w")
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					if i%10 == 0 {
						cancel := s.Observe(func(*session.Session, session.Event) error { return nil })
						defer cancel()
					}
					assert.NoError(t, s.Append(ev("x", item{w, i})))
				}
			})
		}
		wg.Wait()
		assert.Len(t, s.Events(), writers*perWriter)
	})

	t.Run("observers are told in log order even when appends race", func(t *testing.T) {
		// Deterministic interleaving: the observer's delivery of "first"
		// blocks until "second" has been appended by another goroutine. The
		// observer completes "second" first only if deliveries overlap.
		s := session.New("s", "/w")
		var (
			mu        sync.Mutex
			completed []string
		)
		firstEntered := make(chan struct{})
		release := make(chan struct{})
		cancel := s.Observe(func(_ *session.Session, e session.Event) error {
			name, _ := e.Data.(string)
			if name == "first" {
				close(firstEntered)
				<-release
			}
			mu.Lock()
			completed = append(completed, name)
			mu.Unlock()
			return nil
		})
		defer cancel()
		completedHas := func(name string) bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(completed, name)
		}

		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, s.Append(ev("x", "first"))) })
		<-firstEntered
		wg.Go(func() { assert.NoError(t, s.Append(ev("x", "second"))) })
		// Give a concurrent delivery of "second" the chance to happen; a
		// serialized delivery never completes it before "first" is released.
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) && !completedHas("second") {
			time.Sleep(time.Millisecond)
		}
		close(release)
		wg.Wait()

		events := s.Events()
		require.Len(t, events, 2)
		logOrder := []string{events[0].Data.(string), events[1].Data.(string)}
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, logOrder, completed, "Observer is documented as told of every event in order")
	})
}

// TestDone: a tracked session's Done closes when the tracker ends it (and
// only that session's); ending twice is harmless; an untracked session
// never ends.
func TestDone(t *testing.T) {
	closed := func(s *session.Session) bool {
		select {
		case <-s.Done():
			return true
		default:
			return false
		}
	}
	tr := session.NewTracker()
	a, b := tr.Start("a", "/w"), tr.Start("b", "/w")
	untracked := session.New("u", "/w")
	assert.False(t, closed(a))
	assert.False(t, closed(b))
	tr.End(a)
	assert.True(t, closed(a))
	assert.False(t, closed(b), "ending one session ends no other")
	assert.NotContains(t, tr.Sessions(), a)
	assert.Contains(t, tr.Sessions(), b)
	tr.End(a)
	assert.True(t, closed(a))
	resumed, err := tr.Resume("a", "/w")
	require.NoError(t, err)
	assert.False(t, closed(resumed), "a resumed session is a new one, not ended")
	assert.False(t, closed(untracked))
}

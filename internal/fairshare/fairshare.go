// Package fairshare shares a fixed number of slots between keys (a
// server's principals) and, within a key, between sub-keys (its sessions).
// A key holds at most its cap of slots at once, so one key cannot take
// every slot; when slots are scarce, waiters are served round-robin: the
// next key with a waiter and room under its cap, and within it the next
// sub-key, and within a sub-key first come, first served. A key's flood
// then waits behind its own cap and never in front of another key's call.
//
// A wait is bounded: Acquire refuses at once (*BusyError, Full) when the
// queue holds Config.MaxWaiting waiters, or the key Ticket.MaxWaiting,
// and gives up (*BusyError, not Full) after Config.MaxWait. Each refusal
// says how long to wait before trying again: the time the waiters ahead
// need at the recent pace of the slots (RetryAfter). Resume waits without
// those bounds, for a caller admitted once that gave its slot back while it
// waited on something else.
package fairshare

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Config sizes a Queue.
type Config struct {
	// Slots is how many holds may be out at once, over all keys; at least 1.
	Slots int
	// MaxWaiting bounds the Acquire calls waiting at once over all keys
	// (each one a goroutine and its request in memory); 0 means no bound.
	MaxWaiting int
	// MaxWait bounds how long an Acquire waits for a slot; 0 means until
	// its context ends.
	MaxWait time.Duration
}

// Ticket names who asks for a slot.
type Ticket struct {
	// Key is the party slots are shared between (a principal's name).
	Key string
	// Sub is the party within Key its slots are shared between (a
	// session's id).
	Sub string
	// Cap is the most slots Key holds at once; 0 or less, or more than
	// Config.Slots, means Config.Slots. The last Acquire's cap applies.
	Cap int
	// MaxWaiting bounds the Acquire calls of Key waiting at once, so that
	// one key's flood cannot fill the queue; 0 means none but
	// Config.MaxWaiting.
	MaxWaiting int
}

// BusyError is Acquire's refusal: the queue was full (Full) or the wait
// bound passed first.
type BusyError struct {
	// Full is true when the queue (or the key's part of it) was full: the
	// call did not wait. False: it waited Config.MaxWait.
	Full bool
	// Waited is how long the call waited; 0 when Full.
	Waited time.Duration
	// RetryAfter is how long to wait before trying again: the time the
	// calls waiting at the refusal need at the pace the slots were freed
	// lately, at least one second, whole seconds.
	RetryAfter time.Duration
}

// Error says why and how long to wait.
func (e *BusyError) Error() string {
	why := "every slot is taken and the queue of waiting calls is full"
	if !e.Full {
		why = "no slot became free within " + e.Waited.Round(time.Millisecond).String()
	}
	return why + "; retry after " + strconv.Itoa(int(e.RetryAfter/time.Second)) + "s"
}

// Queue shares Config.Slots slots fairly. It is safe for concurrent use.
type Queue struct {
	cfg Config

	mu      sync.Mutex
	free    int
	waiting int             // bounded waiters (Acquire), over all keys
	keys    map[string]*key // keys holding or waiting for a slot
	ring    []*key          // keys with a waiter, in the order they are served
	hold    time.Duration   // moving average of a hold's length
}

// key is one key's holds and waiters.
type key struct {
	name    string
	cap     int
	held    int
	bounded int    // its waiters from Acquire
	subs    []*sub // its sub-keys with a waiter, in the order they are served
}

// sub is one sub-key's waiters, oldest first.
type sub struct {
	name string
	list []*waiter
}

// waiter is one call waiting for a slot.
type waiter struct {
	k       *key
	s       *sub
	bounded bool
	ready   chan struct{} // closed when granted
	granted bool
}

// New returns a Queue of cfg.Slots slots (at least 1).
func New(cfg Config) *Queue {
	cfg.Slots = max(1, cfg.Slots)
	return &Queue{cfg: cfg, free: cfg.Slots, keys: map[string]*key{}}
}

// Slots returns how many slots the Queue shares.
func (q *Queue) Slots() int { return q.cfg.Slots }

// Hold is one slot held; Release gives it back.
type Hold struct {
	q     *Queue
	k     *key
	since time.Time
}

// Release gives the slot back to the next waiter in the fair order. A
// Hold is released once; a second Release does nothing.
func (h *Hold) Release() {
	if h == nil || h.q == nil {
		return
	}
	q := h.q
	h.q = nil
	q.mu.Lock()
	defer q.mu.Unlock()
	d := time.Since(h.since)
	if q.hold == 0 {
		q.hold = d
	} else {
		q.hold += (d - q.hold) / 8
	}
	h.k.held--
	q.free++
	q.forget(h.k)
	q.dispatch()
}

// Acquire takes a slot for t, waiting in the fair order when none is
// free to t (every slot taken, or t.Key at its cap). Errors: *BusyError
// when the queue is full (at once) or Config.MaxWait passes first; ctx's
// error when ctx ends first. On an error nothing is held.
func (q *Queue) Acquire(ctx context.Context, t Ticket) (*Hold, error) {
	return q.take(ctx, t, true)
}

// Resume takes a slot for t as Acquire does, but outside the queue's
// bounds and without Config.MaxWait: for a caller admitted once that gave
// its slot back while it waited on something else. Errors: ctx's error.
func (q *Queue) Resume(ctx context.Context, t Ticket) (*Hold, error) {
	return q.take(ctx, t, false)
}

func (q *Queue) take(ctx context.Context, t Ticket, bounded bool) (*Hold, error) {
	q.mu.Lock()
	k := q.keys[t.Key]
	if k == nil {
		k = &key{name: t.Key}
		q.keys[t.Key] = k
	}
	k.cap = t.Cap
	if k.cap <= 0 || k.cap > q.cfg.Slots {
		k.cap = q.cfg.Slots
	}
	if q.free > 0 && k.held < k.cap && len(k.subs) == 0 {
		h := q.grant(k)
		q.mu.Unlock()
		return h, nil
	}
	if bounded && ((q.cfg.MaxWaiting > 0 && q.waiting >= q.cfg.MaxWaiting) ||
		(t.MaxWaiting > 0 && k.bounded >= t.MaxWaiting)) {
		err := &BusyError{Full: true, RetryAfter: q.retryAfter()}
		q.forget(k)
		q.mu.Unlock()
		return nil, err
	}
	w := &waiter{k: k, bounded: bounded, ready: make(chan struct{})}
	q.enqueue(w, t.Sub)
	q.mu.Unlock()

	var expired <-chan time.Time
	start := time.Now()
	if bounded && q.cfg.MaxWait > 0 {
		timer := time.NewTimer(q.cfg.MaxWait)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-w.ready:
		return q.held(k), nil
	case <-ctx.Done():
	case <-expired:
	}
	q.mu.Lock()
	if w.granted {
		q.mu.Unlock()
		h := q.held(k)
		if ctx.Err() == nil {
			// The wait bound and the slot came together: the slot wins.
			return h, nil
		}
		h.Release()
		return nil, ctx.Err()
	}
	q.dequeue(w)
	q.forget(k)
	var err error = &BusyError{Waited: time.Since(start), RetryAfter: q.retryAfter()}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	q.mu.Unlock()
	return nil, err
}

// held returns the Hold of a slot granted to a waiter of k.
func (q *Queue) held(k *key) *Hold { return &Hold{q: q, k: k, since: time.Now()} }

// grant gives k a free slot; q.mu is held.
func (q *Queue) grant(k *key) *Hold {
	q.free--
	k.held++
	return q.held(k)
}

// enqueue adds w behind the waiters of its sub-key, and its sub-key and key
// at the end of their rings when they had no waiter; q.mu is held.
func (q *Queue) enqueue(w *waiter, subName string) {
	k := w.k
	if len(k.subs) == 0 {
		q.ring = append(q.ring, k)
	}
	i := slices.IndexFunc(k.subs, func(s *sub) bool { return s.name == subName })
	if i < 0 {
		k.subs = append(k.subs, &sub{name: subName})
		i = len(k.subs) - 1
	}
	w.s = k.subs[i]
	w.s.list = append(w.s.list, w)
	if w.bounded {
		k.bounded++
		q.waiting++
	}
}

// dequeue removes w, which was not granted, from its sub-key; q.mu is held.
func (q *Queue) dequeue(w *waiter) {
	k := w.k
	w.s.list = slices.DeleteFunc(w.s.list, func(x *waiter) bool { return x == w })
	if w.bounded {
		k.bounded--
		q.waiting--
	}
	if len(w.s.list) == 0 {
		k.subs = slices.DeleteFunc(k.subs, func(s *sub) bool { return s == w.s })
	}
	if len(k.subs) == 0 {
		q.ring = slices.DeleteFunc(q.ring, func(x *key) bool { return x == k })
	}
	// A waiter that left may have been all that kept a free slot from
	// another key's waiter (they are served in order): serve again.
	q.dispatch()
}

// dispatch grants free slots to waiters, round-robin over the keys with a
// waiter and room under their cap, and within a key over its sub-keys;
// q.mu is held.
func (q *Queue) dispatch() {
	for q.free > 0 {
		i := slices.IndexFunc(q.ring, func(k *key) bool { return k.held < k.cap })
		if i < 0 {
			return
		}
		k := q.ring[i]
		// k is served now: it goes to the back of the ring.
		q.ring = append(slices.Delete(q.ring, i, i+1), k)
		s := k.subs[0]
		w := s.list[0]
		s.list = s.list[1:]
		k.subs = k.subs[1:]
		if len(s.list) > 0 {
			k.subs = append(k.subs, s)
		}
		if len(k.subs) == 0 {
			q.ring = q.ring[:len(q.ring)-1]
		}
		if w.bounded {
			k.bounded--
			q.waiting--
		}
		q.free--
		k.held++
		w.granted = true
		close(w.ready)
	}
}

// forget drops k's state when it holds and awaits nothing; q.mu is held.
func (q *Queue) forget(k *key) {
	if k.held == 0 && len(k.subs) == 0 && q.keys[k.name] == k {
		delete(q.keys, k.name)
	}
}

// retryAfter is how long the waiters need at the recent pace: the average
// hold times the rounds of Slots the waiters (and one more) make, whole
// seconds, at least one; q.mu is held.
func (q *Queue) retryAfter() time.Duration {
	rounds := (q.waiting + q.cfg.Slots) / q.cfg.Slots
	d := (q.hold * time.Duration(rounds)).Round(time.Second)
	return max(time.Second, d)
}

// Waiting returns how many calls of key wait for a slot (Acquire and
// Resume both).
func (q *Queue) Waiting(keyName string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	if k := q.keys[keyName]; k != nil {
		for _, s := range k.subs {
			n += len(s.list)
		}
	}
	return n
}

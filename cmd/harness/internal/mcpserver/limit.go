package mcpserver

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"

	"github.com/dsh-go/harness/services/errcode"
)

// CodeServerBusy is the code (in _meta, see CodeMetaKey) of the tool error a
// call gets when every call slot of the process is taken and the queue of
// calls waiting for one is full. The client may retry later.
const CodeServerBusy errcode.Code = "SERVER_BUSY"

// queuePerSlot is how many calls may wait per call slot before a call is
// refused as busy: a burst a little larger than the cap is absorbed, a
// flood is not turned into unbounded waiting goroutines.
const queuePerSlot = 4

// defaultMaxConcurrentCalls is the cap when none is configured: four times
// GOMAXPROCS, at least 8. A call is mostly file I/O and memory (a list holds
// its entries), so the cap bounds both by the machine's size; a durable write
// spends most of its time blocked in fsync, and eight of them in flight share
// their directory's fsync (issue 15), so the cap is not the core count.
func defaultMaxConcurrentCalls() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// errBusy says every slot is taken and the queue is full.
var errBusy = errors.New("the server is busy: every call slot is taken and the queue of waiting calls is full; retry later")

// limiter caps the tool calls running at once in the process: a call takes
// a slot, waits for one in a bounded queue when all are taken, and is
// refused with errBusy when the queue is full too. Waiters are served in
// arrival order (a channel's senders queue first in, first out).
type limiter struct {
	slots   chan struct{}
	waiting atomic.Int64
	queue   int64
}

// newLimiter returns a limiter of n slots (n <= 0: the default) and a queue
// of queuePerSlot*n waiting calls.
func newLimiter(n int) *limiter {
	if n <= 0 {
		n = defaultMaxConcurrentCalls()
	}
	return &limiter{slots: make(chan struct{}, n), queue: int64(queuePerSlot * n)}
}

// slot is one call's claim on a limiter; its zero value holds nothing.
type slot struct {
	l    *limiter
	held bool
}

// acquire takes a slot, waiting in the queue when all are taken: errBusy
// when the queue is full, ctx's error when ctx ends first.
func (s *slot) acquire(ctx context.Context) error {
	select {
	case s.l.slots <- struct{}{}:
		s.held = true
		return nil
	default:
	}
	if s.l.waiting.Add(1) > s.l.queue {
		s.l.waiting.Add(-1)
		return errBusy
	}
	defer s.l.waiting.Add(-1)
	return s.resume(ctx)
}

// resume takes a slot again for a call that already held one (after it
// waited for the user): it waits outside the queue bound, since the call
// was admitted once, until a slot frees or ctx ends.
func (s *slot) resume(ctx context.Context) error {
	select {
	case s.l.slots <- struct{}{}:
		s.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the slot back; it does nothing when none is held.
func (s *slot) release() {
	if s.held {
		s.held = false
		<-s.l.slots
	}
}

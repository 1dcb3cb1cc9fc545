package mcpserver

import (
	"context"
	"runtime"
	"time"

	"github.com/dsh-go/harness/internal/fairshare"
	"github.com/dsh-go/harness/services/errcode"
)

// CodeServerBusy is the code (in _meta, see CodeMetaKey) of the tool error a
// call gets when it cannot be served soon: the queue of calls waiting for a
// slot is full (the process's, or its principal's half of it), or no slot
// became free within Options.CallWait. The result's _meta also carries
// RetryAfterMetaKey, the seconds to wait before trying again.
const CodeServerBusy errcode.Code = "SERVER_BUSY"

// RetryAfterMetaKey is the _meta key of a SERVER_BUSY result's hint: how
// many seconds to wait before calling again (a whole number, at least 1),
// the time the calls waiting at the refusal need at the recent pace.
const RetryAfterMetaKey = "harness/retryAfterSeconds"

// waitingPerSlot is how many calls may wait per call slot when
// Options.MaxWaitingCalls is zero: a waiting call costs a goroutine and its
// decoded request (at most 64 KiB; a larger body is held by its principal's
// body budget), so 64 per slot on 2 cores (512 calls) stays within a few
// tens of megabytes, and a team's burst waits instead of being refused.
const waitingPerSlot = 64

// DefaultCallWait is how long a call waits for a slot when
// Options.CallWait is zero.
const DefaultCallWait = 30 * time.Second

// defaultMaxConcurrentCalls is the cap when none is configured: four times
// GOMAXPROCS, at least 8. A call is mostly file I/O and memory (a list holds
// its entries), so the cap bounds both by the machine's size; a durable write
// spends most of its time blocked in fsync, and eight of them in flight share
// their directory's fsync (issue 15), so the cap is not the core count.
func defaultMaxConcurrentCalls() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// newCallQueue returns the process's call slots for opts: MaxConcurrentCalls
// slots (defaulted), MaxWaitingCalls waiting (defaulted to waitingPerSlot a
// slot), each wait bounded by CallWait (defaulted); and how many may wait.
func newCallQueue(opts Options) (*fairshare.Queue, int) {
	n := opts.MaxConcurrentCalls
	if n <= 0 {
		n = defaultMaxConcurrentCalls()
	}
	waiting := opts.MaxWaitingCalls
	if waiting <= 0 {
		waiting = waitingPerSlot * n
	}
	wait := opts.CallWait
	if wait <= 0 {
		wait = DefaultCallWait
	}
	return fairshare.New(fairshare.Config{Slots: n, MaxWaiting: waiting, MaxWait: wait}), waiting
}

// slot is one call's claim on the process's call slots, as the party it
// is shared fairly as (its principal, its session); its zero hold holds
// nothing.
type slot struct {
	q    *fairshare.Queue
	t    fairshare.Ticket
	hold *fairshare.Hold
}

// acquire takes a slot, waiting in the fair order when none is free to the
// call: *fairshare.BusyError when the queue is full or the wait bound
// passes, ctx's error when ctx ends first.
func (s *slot) acquire(ctx context.Context) error {
	h, err := s.q.Acquire(ctx, s.t)
	s.hold = h
	return err
}

// resume takes a slot again for a call that already held one (after it
// waited for the user, or for a command): it waits outside the queue's
// bounds, since the call was admitted once, until a slot frees or ctx ends.
func (s *slot) resume(ctx context.Context) error {
	h, err := s.q.Resume(ctx, s.t)
	s.hold = h
	return err
}

// release gives the slot back; it does nothing when none is held.
func (s *slot) release() {
	s.hold.Release()
	s.hold = nil
}

package fairshare_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fairshare"
)

// got is one Acquire's outcome, with the ticket that made it.
type got struct {
	t    fairshare.Ticket
	hold *fairshare.Hold
	err  error
}

// enqueue starts an Acquire (Resume when resume) of t and returns once
// it waits in q (q.Waiting(t.Key) grew), or once it ended when it did not
// have to wait; its outcome arrives on out.
func enqueue(ctx context.Context, q *fairshare.Queue, t fairshare.Ticket, resume bool, out chan<- got) {
	before := q.Waiting(t.Key)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		take := q.Acquire
		if resume {
			take = q.Resume
		}
		h, err := take(ctx, t)
		out <- got{t: t, hold: h, err: err}
	}()
	for q.Waiting(t.Key) == before {
		select {
		case <-ended:
			return
		default:
			runtime.Gosched()
		}
	}
}

// TestFairOrder: with every slot taken, waiters are served round-robin
// between keys (in the order each key first waited), within a key
// round-robin between sub-keys, and within a sub-key first come, first
// served; a key at its cap is passed over while another key can use the
// slot.
func TestFairOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		slots   int
		holders []fairshare.Ticket // take the slots first
		waiters []fairshare.Ticket // then queue, in this order
		want    []string           // Key/Sub of the waiters served, in order, one release at a time
	}{{
		name:    "keys take turns",
		slots:   1,
		holders: []fairshare.Ticket{{Key: "alice", Sub: "a1"}},
		waiters: []fairshare.Ticket{{Key: "alice", Sub: "a1"}, {Key: "alice", Sub: "a1"}, {Key: "alice", Sub: "a1"}, {Key: "bob", Sub: "b1"}, {Key: "carol", Sub: "c1"}},
		want:    []string{"alice/a1", "bob/b1", "carol/c1", "alice/a1", "alice/a1"},
	}, {
		name:    "sessions of one key take turns",
		slots:   1,
		holders: []fairshare.Ticket{{Key: "alice", Sub: "a1"}},
		waiters: []fairshare.Ticket{{Key: "alice", Sub: "a1"}, {Key: "alice", Sub: "a1"}, {Key: "alice", Sub: "a2"}, {Key: "alice", Sub: "a3"}},
		want:    []string{"alice/a1", "alice/a2", "alice/a3", "alice/a1"},
	}, {
		name:    "a key at its cap is passed over",
		slots:   2,
		holders: []fairshare.Ticket{{Key: "alice", Sub: "a1", Cap: 1}, {Key: "bob", Sub: "b1", Cap: 1}},
		waiters: []fairshare.Ticket{{Key: "alice", Sub: "a1", Cap: 1}, {Key: "bob", Sub: "b1", Cap: 1}, {Key: "carol", Sub: "c1", Cap: 1}},
		// The first release is bob's holder's: alice, first in the ring,
		// is at her cap, so bob's waiter is served; then alice's holder
		// goes and alice's waiter is served; then carol's.
		want: []string{"bob/b1", "alice/a1", "carol/c1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := fairshare.New(fairshare.Config{Slots: tc.slots})
			var holds []*fairshare.Hold
			for _, h := range tc.holders {
				hold, err := q.Acquire(t.Context(), h)
				require.NoError(t, err)
				holds = append(holds, hold)
			}
			out := make(chan got, len(tc.waiters))
			for _, w := range tc.waiters {
				enqueue(t.Context(), q, w, false, out)
			}
			require.Empty(t, out, "every waiter waits")
			// Release the holders last first (the third case releases
			// bob's first), then each served waiter in turn.
			slicesReverse(holds)
			var served []string
			for range tc.want {
				if len(holds) > 0 {
					holds[0].Release()
					holds = holds[1:]
				}
				g := <-out
				require.NoError(t, g.err)
				served = append(served, g.t.Key+"/"+g.t.Sub)
				if len(holds) == 0 {
					holds = append(holds, g.hold)
				} else {
					defer g.hold.Release()
				}
			}
			for _, h := range holds {
				h.Release()
			}
			assert.Equal(t, tc.want, served)
			for _, k := range []string{"alice", "bob", "carol"} {
				assert.Zero(t, q.Waiting(k), k)
			}
		})
	}
}

func slicesReverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// TestCapLeavesRoomForOthers (issue 35): a key at its cap waits while
// another key takes a free slot at once.
func TestCapLeavesRoomForOthers(t *testing.T) {
	q := fairshare.New(fairshare.Config{Slots: 4})
	alice := fairshare.Ticket{Key: "alice", Sub: "a1", Cap: 2}
	for range 2 {
		h, err := q.Acquire(t.Context(), alice)
		require.NoError(t, err)
		defer h.Release()
	}
	out := make(chan got, 2)
	enqueue(t.Context(), q, alice, false, out)
	enqueue(t.Context(), q, alice, false, out)
	assert.Equal(t, 2, q.Waiting("alice"), "alice's third and fourth wait behind her cap")
	h, err := q.Acquire(t.Context(), fairshare.Ticket{Key: "bob", Sub: "b1", Cap: 2})
	require.NoError(t, err, "bob takes a free slot at once")
	h.Release()
	assert.Empty(t, out)
}

// TestBounds: a full queue refuses at once, the whole queue's bound and
// one key's; a wait past MaxWait is refused; both say how long to wait; a
// cancelled wait leaves the queue; Resume is held to none of the bounds.
func TestBounds(t *testing.T) {
	q := fairshare.New(fairshare.Config{Slots: 1, MaxWaiting: 3})
	hold, err := q.Acquire(t.Context(), fairshare.Ticket{Key: "alice", MaxWaiting: 2})
	require.NoError(t, err)
	out := make(chan got, 8)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	enqueue(ctx, q, fairshare.Ticket{Key: "alice", MaxWaiting: 2}, false, out)
	enqueue(ctx, q, fairshare.Ticket{Key: "alice", MaxWaiting: 2}, false, out)

	_, err = q.Acquire(t.Context(), fairshare.Ticket{Key: "alice", MaxWaiting: 2})
	var busy *fairshare.BusyError
	require.ErrorAs(t, err, &busy, "alice's part of the queue is full")
	assert.True(t, busy.Full)
	assert.GreaterOrEqual(t, busy.RetryAfter, time.Second)
	assert.Contains(t, err.Error(), "retry after")

	enqueue(ctx, q, fairshare.Ticket{Key: "bob"}, false, out)
	_, err = q.Acquire(t.Context(), fairshare.Ticket{Key: "carol"})
	require.ErrorAs(t, err, &busy, "the whole queue is full")
	assert.True(t, busy.Full)

	enqueue(ctx, q, fairshare.Ticket{Key: "alice", MaxWaiting: 2}, true, out)
	assert.Equal(t, 3, q.Waiting("alice"), "Resume waits beyond alice's bound")
	assert.Empty(t, out)

	cancel()
	for range 4 {
		g := <-out
		assert.ErrorIs(t, g.err, context.Canceled)
		assert.Nil(t, g.hold)
	}
	assert.Zero(t, q.Waiting("alice")+q.Waiting("bob"), "a cancelled wait leaves the queue")

	q2 := fairshare.New(fairshare.Config{Slots: 1, MaxWait: time.Millisecond})
	h2, err := q2.Acquire(t.Context(), fairshare.Ticket{Key: "alice", MaxWaiting: 2})
	require.NoError(t, err)
	_, err = q2.Acquire(t.Context(), fairshare.Ticket{Key: "bob"})
	require.ErrorAs(t, err, &busy, "the slot stays taken past MaxWait")
	assert.False(t, busy.Full)
	assert.GreaterOrEqual(t, busy.Waited, time.Millisecond)
	assert.GreaterOrEqual(t, busy.RetryAfter, time.Second)
	h2.Release()
	hold.Release()
	hold.Release() // a second release gives nothing back twice
	h3, err := q.Acquire(t.Context(), fairshare.Ticket{Key: "bob"})
	require.NoError(t, err)
	_, err = q.Acquire(ctxDone(), fairshare.Ticket{Key: "carol"})
	assert.ErrorIs(t, err, context.Canceled, "one slot: the double release freed no second one")
	h3.Release()
}

func ctxDone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

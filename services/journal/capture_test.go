//go:build linux

package journal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/journal"
)

// endless yields 'x' forever, counting its reads; after the first it
// cancels its context (nil: never).
type endless struct {
	reads  int
	cancel context.CancelFunc
}

func (r *endless) Read(b []byte) (int, error) {
	r.reads++
	if r.reads == 1 && r.cancel != nil {
		r.cancel()
	}
	for i := range b {
		b[i] = 'x'
	}
	return len(b), nil
}

// A content larger than the room under the cap is never read: its node
// has the size and no hash, the entry keeps nothing, and so does every
// content captured after it in the same change.
func TestCaptureOverCapNotRead(t *testing.T) {
	work, state := t.TempDir(), filepath.Join(t.TempDir(), "journal")
	require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte("small\n"), 0o600))
	huge := filepath.Join(work, "b")
	require.NoError(t, os.WriteFile(huge, nil, 0o600))
	require.NoError(t, os.Truncate(huge, 100<<30))
	require.NoError(t, os.WriteFile(filepath.Join(work, "c"), []byte("after\n"), 0o600))
	j := open(t, state, 1<<20, 0)
	tx, err := j.Begin(journal.Entry{Tool: "delete", Kind: journal.Delete, Paths: []string{work}})
	require.NoError(t, err)
	p := parentOf(t, work)
	var nodes []journal.Node
	for _, name := range []string{"a", "b", "c"} {
		n, err := tx.Capture(p, name, filepath.Join(work, name))
		require.NoError(t, err)
		nodes = append(nodes, n...)
	}
	e, err := tx.Commit()
	require.NoError(t, err)
	require.Len(t, nodes, 3)
	assert.Equal(t, sum([]byte("small\n")), nodes[0].Hash, "read before the cap was passed")
	assert.Equal(t, int64(100<<30), nodes[1].Size)
	assert.Empty(t, nodes[1].Hash, "the huge file was not read")
	assert.Empty(t, nodes[2].Hash, "nothing is read once the change keeps nothing")
	assert.False(t, e.Kept)
	assert.Zero(t, e.Bytes)
	assert.Equal(t, fmt.Sprintf("%d bytes, over the journal cap of %d", int64(100<<30)+12, 1<<20), e.NotKept)
	st, err := os.Stat(filepath.Join(state, "seg-000001"))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(4<<10), "the segment holds the entry and no content")
}

// A done context stops AddBlob before its next chunk, kept or only
// hashed (past the cap), and Capture before it reads; the aborted Txn
// leaves nothing.
func TestTxnContextStopsReading(t *testing.T) {
	cases := []struct {
		name     string
		maxBytes int64
	}{
		{"kept", 64 << 20},
		{"past the cap", 1 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "journal")
			j := open(t, state, tc.maxBytes, 0)
			tx, err := j.Begin(journal.Entry{Tool: "write", Kind: journal.Write, Paths: []string{"/x"}})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tx.SetContext(ctx)
			r := &endless{cancel: cancel}
			_, _, err = tx.AddBlob(r, -1)
			require.ErrorIs(t, err, context.Canceled)
			assert.LessOrEqual(t, r.reads, 2, "stopped at the chunk after the cancel")
			tx.Abort()
			assertEmptySegment(t, state)
		})
	}

	t.Run("capture", func(t *testing.T) {
		work, state := t.TempDir(), filepath.Join(t.TempDir(), "journal")
		require.NoError(t, os.WriteFile(filepath.Join(work, "a"), []byte(strings.Repeat("y", 1<<20)), 0o600))
		j := open(t, state, 64<<20, 0)
		tx, err := j.Begin(journal.Entry{Tool: "write", Kind: journal.Write, Paths: []string{filepath.Join(work, "a")}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tx.SetContext(ctx)
		_, err = tx.Capture(parentOf(t, work), "a", filepath.Join(work, "a"))
		require.ErrorIs(t, err, context.Canceled)
		tx.Abort()
		assertEmptySegment(t, state)
	})
}

func assertEmptySegment(t *testing.T, state string) {
	t.Helper()
	st, err := os.Stat(filepath.Join(state, "seg-000001"))
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	assert.Zero(t, st.Size())
}

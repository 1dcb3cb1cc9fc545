//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// msCall runs tl under ctx: a call stuck waiting for a turn ends with
// FS_ABORTED when ctx does, instead of hanging the test.
func msCall(ctx context.Context, t *testing.T, tl *tool.Tool, sess *session.Session, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Handler(session.NewContext(ctx, sess), tool.Call{ID: tl.Name, Arguments: raw})
}

func msExists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if os.IsNotExist(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestSequenceOwnManageCalls extends TestSequenceOwnParallelCalls to mkdir,
// delete and move (issue 16): they take the session's turn on their
// targets like read, write and edit, so a session's write racing its own
// move or delete of the file never goes stale on it, and a move A->B racing
// a move B->A takes both turns in one order and never deadlocks. Each case
// checks the disk.
func TestSequenceOwnManageCalls(t *testing.T) {
	const rounds = 100
	for _, deployment := range []string{"fslocal", "fssandbox workspace-write"} {
		env := func(t *testing.T, ws string) *wrEnv {
			if deployment == "fslocal" {
				return wrLocal(t, ws, false)
			}
			return wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(wrWW, ws)})
		}
		t.Run(deployment, func(t *testing.T) {
			t.Run("a write racing a move of the read file: both succeed, in one order or the other", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				for i := range rounds {
					ws := wrBase(t)
					a, b := wrPut(t, filepath.Join(ws, "a.txt"), "original\n"), filepath.Join(ws, "b.txt")
					e := env(t, ws)
					sess := session.New("s1", ws)
					e.mustRead(sess, "a.txt")
					var write, move tool.Result
					var wg sync.WaitGroup
					wg.Go(func() {
						write = msCall(ctx, t, e.tools.Write(), sess, map[string]any{"file_path": "a.txt", "content": "new\n"})
					})
					wg.Go(func() {
						move = msCall(ctx, t, e.tools.Move(), sess, map[string]any{"source": "a.txt", "destination": "b.txt"})
					})
					wg.Wait()
					require.False(t, write.IsError, "round %d, write: %s (move: %s)", i, write.Text, move.Text)
					require.False(t, move.IsError, "round %d, move: %s", i, move.Text)
					if msExists(t, a) {
						// The move came first; the write then created a.txt.
						assert.Equal(t, "original\n", wrDisk(t, b), "round %d", i)
						assert.Equal(t, "new\n", wrDisk(t, a), "round %d", i)
					} else {
						assert.Equal(t, "new\n", wrDisk(t, b), "round %d: the write came first, the move took it", i)
					}
					assert.Empty(t, fixture.Residue(t, ws))
				}
			})

			t.Run("a write racing a delete of the read file: both succeed, in one order or the other", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				for i := range rounds {
					ws := wrBase(t)
					a := wrPut(t, filepath.Join(ws, "a.txt"), "original\n")
					e := env(t, ws)
					sess := session.New("s1", ws)
					e.mustRead(sess, "a.txt")
					var write, del tool.Result
					var wg sync.WaitGroup
					wg.Go(func() {
						write = msCall(ctx, t, e.tools.Write(), sess, map[string]any{"file_path": "a.txt", "content": "new\n"})
					})
					wg.Go(func() { del = msCall(ctx, t, e.tools.Delete(), sess, map[string]any{"path": "a.txt"}) })
					wg.Wait()
					require.False(t, write.IsError, "round %d, write: %s", i, write.Text)
					require.False(t, del.IsError, "round %d, delete: %s", i, del.Text)
					if msExists(t, a) {
						assert.Equal(t, "new\n", wrDisk(t, a), "round %d: the delete came first, the write created the file", i)
					}
					assert.Empty(t, fixture.Residue(t, ws))
				}
			})

			t.Run("a move A->B racing a move B->A never deadlocks; the file ends at one of the two", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				ws := wrBase(t)
				a, b := wrPut(t, filepath.Join(ws, "a.txt"), "content\n"), filepath.Join(ws, "b.txt")
				e := env(t, ws)
				sess := session.New("s1", ws)
				for i := range rounds {
					var ab, ba tool.Result
					var wg sync.WaitGroup
					wg.Go(func() {
						ab = msCall(ctx, t, e.tools.Move(), sess, map[string]any{"source": "a.txt", "destination": "b.txt"})
					})
					wg.Go(func() {
						ba = msCall(ctx, t, e.tools.Move(), sess, map[string]any{"source": "b.txt", "destination": "a.txt"})
					})
					wg.Wait()
					for _, r := range []tool.Result{ab, ba} {
						require.NotEqual(t, fs.CodeAborted, r.Code, "round %d: a move waited until the deadline: %s", i, r.Text)
						if r.IsError {
							assert.EqualValues(t, fs.CodeNotFound, r.Code, "round %d: the other move had not run yet: %s", i, r.Text)
						}
					}
					assert.NotEqual(t, msExists(t, a), msExists(t, b), "round %d: exactly one of the two exists", i)
				}
				for _, p := range []string{a, b} {
					if msExists(t, p) {
						assert.Equal(t, "content\n", wrDisk(t, p))
					}
				}
				assert.Empty(t, fixture.Residue(t, ws))
			})
		})
	}
}

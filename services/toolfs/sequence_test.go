package toolfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// TestSequenceDeletedTarget covers T-75..T-78 in order on one file: read
// (present), external delete, stale edit and write, re-read (records
// absence), edit refused by the policy, recovery write.
func TestSequenceDeletedTarget(t *testing.T) {
	for _, deployment := range []string{"fslocal", "fssandbox workspace-write"} {
		t.Run(deployment, func(t *testing.T) {
			ws := wrBase(t)
			p := wrPut(t, filepath.Join(ws, "a.txt"), "hello\n")
			e := wrLocal(t, ws, false)
			if deployment != "fslocal" {
				e = wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(wrWW, ws)})
			}
			sess := session.New("s1", ws)
			steps := []struct {
				name string
				run  func(t *testing.T)
			}{
				{"read records presence", func(t *testing.T) {
					e.mustRead(sess, "a.txt")
					require.NoError(t, os.Remove(p), "an external delete")
				}},
				{"T-75 edit after the delete is FS_STALE_VERSION with the stale remedy", func(t *testing.T) {
					res := e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"})
					wrFail(t, res, fs.CodeStaleVersion, `Error: cannot edit "`+p+`": file changed since it was read — re-read the file, then retry`)
					assert.NoFileExists(t, p)
				}},
				{"T-75 write after the delete is FS_STALE_VERSION (replaceIfVersion on a missing file) and does not recreate it", func(t *testing.T) {
					e.fs.reset()
					res := e.write(sess, map[string]any{"file_path": "a.txt", "content": "mine\n"})
					wrFail(t, res, fs.CodeStaleVersion, `Error: cannot write "`+p+`": file no longer exists — re-read the file, then retry`)
					require.Len(t, e.fs.writeCalls(), 1)
					assert.Equal(t, fs.ReplaceIfVersion, e.fs.writeCalls()[0].Intent.Kind)
					assert.NoFileExists(t, p)
				}},
				{"T-76 the re-read is FS_NOT_FOUND and records absence", func(t *testing.T) {
					res := e.read(sess, map[string]any{"file_path": "a.txt"})
					wrFail(t, res, fs.CodeNotFound, `Error: cannot read "`+p+`": not found`)
					_, err := e.rbw.EditGuard(context.Background(), sess.Owner(), e.target(p))
					assert.Equal(t, fs.CodeNotFound, fs.CodeOf(err), "the policy now knows the file is absent")
					intent, err := e.rbw.WriteIntent(context.Background(), sess.Owner(), e.target(p))
					require.NoError(t, err)
					assert.Equal(t, fs.CreateOnly(), intent)
				}},
				{"T-77 edit after the absent observation is FS_NOT_FOUND from the policy, with no stale remedy", func(t *testing.T) {
					e.fs.reset()
					res := e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"})
					wrFail(t, res, fs.CodeNotFound, `Error: cannot edit "`+p+`": not found`)
					assert.Empty(t, e.fs.editCalls(), "the policy refuses before the backend")
				}},
				{"T-78 write after the absent observation is createIfAbsent and succeeds", func(t *testing.T) {
					e.fs.reset()
					res := e.write(sess, map[string]any{"file_path": "a.txt", "content": "fresh"})
					wrOK(t, res)
					assert.Equal(t, wrWriteText(p, true), res.Text)
					require.Len(t, e.fs.writeCalls(), 1)
					assert.Equal(t, fs.CreateOnly(), e.fs.writeCalls()[0].Intent)
					assert.Equal(t, "fresh", wrDisk(t, p))
				}},
				{"O-06 the recovery write's observation authorizes the next edit", func(t *testing.T) {
					wrOK(t, e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "fresh", "new_string": "fresher"}))
					assert.Equal(t, "fresher", wrDisk(t, p))
				}},
			}
			for _, s := range steps {
				t.Run(s.name, s.run)
			}
			assert.Empty(t, fixture.Residue(t, ws))
		})
	}
}

// TestSequenceMissingReadThenWrite covers T-79 (and T-33): a read of a
// missing file stats once; the recovery write stats zero times and
// succeeds.
func TestSequenceMissingReadThenWrite(t *testing.T) {
	ws := wrBase(t)
	e := wrLocal(t, ws, false)
	sess := session.New("s1", ws)
	p := filepath.Join(ws, "b.txt")

	res := e.read(sess, map[string]any{"file_path": "b.txt"})
	wrFail(t, res, fs.CodeNotFound, `Error: cannot read "`+p+`": not found`)
	assert.Equal(t, int32(1), e.fs.stats.Load(), "T-79 the missing read stats once")

	res = e.write(sess, map[string]any{"file_path": "b.txt", "content": "recovered"})
	wrOK(t, res)
	assert.Equal(t, int32(1), e.fs.stats.Load(), "T-79 the recovery write stats zero times")
	assert.Equal(t, []fs.WriteOptions{{Intent: fs.CreateOnly()}}, e.fs.writeCalls())
	assert.Equal(t, "recovered", wrDisk(t, p))
}

// TestSequenceParallelEdits covers T-81: one read, then two parallel edits
// of different literals by the same session. While both calls are in
// flight at once (both guards decided before either edit reaches the
// backend), exactly one is FS_STALE_VERSION and the disk shows exactly the
// other's edit.
func TestSequenceParallelEdits(t *testing.T) {
	const original = "alpha beta\n"
	edits := []map[string]any{
		{"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"},
		{"file_path": "a.txt", "old_string": "beta", "new_string": "BETA"},
	}
	outcomes := []string{"ALPHA beta\n", "alpha BETA\n"}

	t.Run("T-81 overlapping edits: exactly one FS_STALE_VERSION, exactly one edit on disk", func(t *testing.T) {
		for i := range 25 {
			ws := wrBase(t)
			p := wrPut(t, filepath.Join(ws, "a.txt"), original)
			e := wrLocal(t, ws, false)
			sess := session.New("s1", ws)
			e.mustRead(sess, "a.txt")
			v1 := e.version(p)

			// A barrier: each edit waits at the backend until both have
			// arrived (bounded, so a broken build fails instead of hanging).
			var arrived atomic.Int32
			release := make(chan struct{})
			e.fs.mu.Lock()
			e.fs.beforeEdit = func() {
				if arrived.Add(1) == 2 {
					close(release)
				}
				select {
				case <-release:
				case <-time.After(5 * time.Second):
				}
			}
			e.fs.mu.Unlock()

			results := make([]tool.Result, 2)
			var wg sync.WaitGroup
			for j := range edits {
				wg.Go(func() { results[j] = wrCall(t, e.tools.Edit(), sess, edits[j]) })
			}
			wg.Wait()

			require.Len(t, e.fs.editCalls(), 2, "iteration %d: both edits reached the backend", i)
			for _, req := range e.fs.editCalls() {
				assert.Equal(t, v1, req.Version, "iteration %d: both guards are the read's version", i)
			}
			var stale, won []int
			for j, r := range results {
				switch {
				case !r.IsError:
					won = append(won, j)
				case r.Code == string(fs.CodeStaleVersion):
					stale = append(stale, j)
					assert.Equal(t, `Error: cannot edit "`+p+`": file changed since it was read — re-read the file, then retry`, r.Text)
				default:
					t.Errorf("iteration %d: unexpected result %q (%s)", i, r.Text, r.Code)
				}
			}
			require.Len(t, stale, 1, "iteration %d: exactly one stale edit", i)
			require.Len(t, won, 1, "iteration %d: exactly one edit lands", i)
			assert.Equal(t, outcomes[won[0]], wrDisk(t, p), "iteration %d: the disk shows exactly the winner's edit", i)
			assert.Empty(t, fixture.Residue(t, ws))
		}
	})

	t.Run("T-81 free-running edits: never a lost update, never both stale", func(t *testing.T) {
		for i := range 50 {
			ws := wrBase(t)
			p := wrPut(t, filepath.Join(ws, "a.txt"), original)
			e := wrLocal(t, ws, false)
			sess := session.New("s1", ws)
			e.mustRead(sess, "a.txt")

			results := make([]tool.Result, 2)
			var wg sync.WaitGroup
			for j := range edits {
				wg.Go(func() { results[j] = wrCall(t, e.tools.Edit(), sess, edits[j]) })
			}
			wg.Wait()

			switch {
			case !results[0].IsError && !results[1].IsError:
				// The second guard was decided after the first edit
				// recorded its own version: sequential, both land.
				assert.Equal(t, "ALPHA BETA\n", wrDisk(t, p), "iteration %d", i)
			case results[0].IsError != results[1].IsError:
				winner := 0
				if results[0].IsError {
					winner = 1
				}
				assert.Equal(t, string(fs.CodeStaleVersion), results[1-winner].Code, "iteration %d: %s", i, results[1-winner].Text)
				assert.Equal(t, outcomes[winner], wrDisk(t, p), "iteration %d", i)
			default:
				t.Errorf("iteration %d: both edits failed: %q, %q", i, results[0].Text, results[1].Text)
			}
		}
	})
}

// TestSequenceOutOfOrderObservation covers T-82: the last recorded
// observation wins, even an older one recorded late, and the provider's
// version check fails closed.
func TestSequenceOutOfOrderObservation(t *testing.T) {
	tests := []struct {
		name string
		edit bool
	}{
		{name: "T-82 edit after an out-of-order older observation is FS_STALE_VERSION; disk unchanged", edit: true},
		{name: "T-82 write after an out-of-order older observation is FS_STALE_VERSION; disk unchanged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := wrBase(t)
			p := wrPut(t, filepath.Join(ws, "a.txt"), "hello v1\n")
			e := wrLocal(t, ws, false)
			sess := session.New("s1", ws)

			e.mustRead(sess, "a.txt")
			v1 := e.version(p)
			wrPut(t, p, "hello version two\n")
			e.mustRead(sess, "a.txt")
			v2 := e.version(p)
			require.NotEqual(t, v1, v2)

			require.NoError(t, e.rbw.Observe(sess.Owner(), e.target(p), fs.Observation{Kind: fs.Present, Version: v1}), "a late present-v1 observation")
			e.fs.reset()

			var res tool.Result
			if tc.edit {
				res = e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"})
				require.Len(t, e.fs.editCalls(), 1)
				assert.Equal(t, v1, e.fs.editCalls()[0].Version, "the last recorded observation wins")
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot edit "`+p+`": file changed since it was read — re-read the file, then retry`)
			} else {
				res = e.write(sess, map[string]any{"file_path": "a.txt", "content": "mine\n"})
				require.Len(t, e.fs.writeCalls(), 1)
				assert.Equal(t, fs.ReplaceVersion(v1), e.fs.writeCalls()[0].Intent, "the last recorded observation wins")
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot write "`+p+`": file changed since it was read — re-read the file, then retry`)
			}
			assert.Equal(t, "hello version two\n", wrDisk(t, p), "the provider's check fails closed")
		})
	}
}

// wrFailingObserver is an Observer that always fails, counting its calls.
type wrFailingObserver struct {
	mu    sync.Mutex
	calls []fs.Observation
}

func (o *wrFailingObserver) Observe(_ *sandbox.Owner, _ fs.Target, obs fs.Observation) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, obs)
	return errors.New("observer exploded")
}

// TestSequenceFailingObserver covers T-83: an observer's error turns a
// successful mutation into an error result, but the bytes are on disk.
func TestSequenceFailingObserver(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		call  func(e *wrEnv, sess *session.Session) tool.Result
		disk  string
		obs   int
	}{
		{
			name: "T-83 a failing observer turns a successful create into an error; the bytes are on disk",
			call: func(e *wrEnv, sess *session.Session) tool.Result {
				return e.write(sess, map[string]any{"file_path": "a.txt", "content": "written"})
			},
			disk: "written", obs: 1,
		},
		{
			name:  "T-83 a failing observer turns a successful edit into an error; the bytes are on disk",
			files: []string{"a.txt: hello"},
			call: func(e *wrEnv, sess *session.Session) tool.Result {
				return e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"})
			},
			disk: "bye", obs: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := wrBase(t)
			fixture.Build(t, ws, tc.files...)
			failing := &wrFailingObserver{}
			e := wrNew(t, wrSetup{Cwd: ws, Bare: true, Observers: []fs.Observer{failing}})
			res := tc.call(e, session.New("s1", ws))
			wrFail(t, res, "", "Error: observer exploded")
			assert.Equal(t, tc.disk, wrDisk(t, filepath.Join(ws, "a.txt")))
			assert.Len(t, failing.calls, tc.obs)
			for _, o := range failing.calls {
				assert.Equal(t, fs.Present, o.Kind)
				assert.Equal(t, e.version(filepath.Join(ws, "a.txt")), o.Version, "the observation carries the new version")
			}
		})
	}
}

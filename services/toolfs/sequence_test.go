//go:build linux

package toolfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

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
					assert.EqualValues(t, fs.CodeNotFound, fs.CodeOf(err), "the policy now knows the file is absent")
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

// TestSequenceOwnParallelCalls covers issue 13, item 11, which supersedes
// T-81: a session never goes stale on itself. Its parallel calls on one file
// apply one after another, each checked against the observation the previous
// one recorded; a change made by anyone else is still FS_STALE_VERSION. Each
// case checks the disk.
func TestSequenceOwnParallelCalls(t *testing.T) {
	for _, deployment := range []string{"fslocal", "fssandbox workspace-write"} {
		env := func(t *testing.T, ws string) *wrEnv {
			if deployment == "fslocal" {
				return wrLocal(t, ws, false)
			}
			return wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(wrWW, ws)})
		}
		t.Run(deployment, func(t *testing.T) {
			t.Run("four writes of one file at once all succeed; the disk holds one of them intact", func(t *testing.T) {
				for i := range 10 {
					ws := wrBase(t)
					p := wrPut(t, filepath.Join(ws, "a.txt"), "original\n")
					e := env(t, ws)
					sess := session.New("s1", ws)
					e.mustRead(sess, "a.txt")
					contents := []string{"one\n", "two two\n", "three three three\n", "four four four four\n"}
					results := make([]tool.Result, len(contents))
					var wg sync.WaitGroup
					for j, c := range contents {
						wg.Go(func() { results[j] = e.write(sess, map[string]any{"file_path": "a.txt", "content": c}) })
					}
					wg.Wait()
					for j, r := range results {
						assert.False(t, r.IsError, "iteration %d, write %d: %s", i, j, r.Text)
					}
					assert.Contains(t, contents, wrDisk(t, p), "iteration %d: the last write wins, intact", i)
					assert.Empty(t, fixture.Residue(t, ws))
				}
			})

			t.Run("eight parallel writers, 1000 calls: no stale failure; the disk holds one write intact", func(t *testing.T) {
				const writers, calls = 8, 1000
				ws := wrBase(t)
				p := wrPut(t, filepath.Join(ws, "a.txt"), "original\n")
				e := env(t, ws)
				sess := session.New("s1", ws)
				e.mustRead(sess, "a.txt")
				var failed atomic.Int32
				var first atomic.Value
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						for n := range calls / writers {
							content := strings.Repeat(string(rune('a'+w)), 1+n%7) + "\n"
							if r := e.write(sess, map[string]any{"file_path": "a.txt", "content": content}); r.IsError {
								failed.Add(1)
								first.CompareAndSwap(nil, r.Text)
							}
						}
					})
				}
				wg.Wait()
				assert.Zero(t, failed.Load(), "failed calls of %d; the first: %v", calls, first.Load())
				assert.Regexp(t, `^(a+|b+|c+|d+|e+|f+|g+|h+)\n$`, wrDisk(t, p))
				assert.Empty(t, fixture.Residue(t, ws))
			})

			t.Run("parallel edits of different lines of one file all land", func(t *testing.T) {
				const lines = 8
				for i := range 10 {
					ws := wrBase(t)
					var original, want strings.Builder
					for l := range lines {
						fmt.Fprintf(&original, "line %d\r\n", l)
						fmt.Fprintf(&want, "LINE %d edited\r\n", l)
					}
					p := wrPut(t, filepath.Join(ws, "a.txt"), original.String())
					e := env(t, ws)
					sess := session.New("s1", ws)
					e.mustRead(sess, "a.txt")
					results := make([]tool.Result, lines)
					var wg sync.WaitGroup
					for l := range lines {
						wg.Go(func() {
							results[l] = e.edit(sess, map[string]any{
								"file_path": "a.txt", "old_string": fmt.Sprintf("line %d", l), "new_string": fmt.Sprintf("LINE %d edited", l),
							})
						})
					}
					wg.Wait()
					for l, r := range results {
						assert.False(t, r.IsError, "iteration %d, edit %d: %s", i, l, r.Text)
					}
					assert.Equal(t, want.String(), wrDisk(t, p), "iteration %d: every edit, every CRLF kept", i)
				}
			})

			t.Run("a session's write after its own edit needs no re-read", func(t *testing.T) {
				ws := wrBase(t)
				p := wrPut(t, filepath.Join(ws, "a.txt"), "alpha\n")
				e := env(t, ws)
				sess := session.New("s1", ws)
				e.mustRead(sess, "a.txt")
				var wg sync.WaitGroup
				var edit, write tool.Result
				wg.Go(func() {
					edit = e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"})
				})
				wg.Go(func() { write = e.write(sess, map[string]any{"file_path": "a.txt", "content": "gamma\n"}) })
				wg.Wait()
				require.False(t, write.IsError, write.Text)
				if edit.IsError {
					// The write came first: the edit then finds no "alpha".
					assert.EqualValues(t, fs.CodeEditNotFound, edit.Code, edit.Text)
					assert.Equal(t, "gamma\n", wrDisk(t, p))
				} else {
					assert.Equal(t, "gamma\n", wrDisk(t, p), "the edit came first, the write replaced it")
				}
			})

			t.Run("an outside modification between read and write is still FS_STALE_VERSION; disk keeps it", func(t *testing.T) {
				ws := wrBase(t)
				p := wrPut(t, filepath.Join(ws, "a.txt"), "mine\n")
				e := env(t, ws)
				sess := session.New("s1", ws)
				e.mustRead(sess, "a.txt")
				wrPut(t, p, "theirs\n")
				res := e.write(sess, map[string]any{"file_path": "a.txt", "content": "clobber\n"})
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot write "`+p+`": file changed since it was read — re-read the file, then retry`)
				res = e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "theirs", "new_string": "clobber"})
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot edit "`+p+`": file changed since it was read — re-read the file, then retry`)
				assert.Equal(t, "theirs\n", wrDisk(t, p))
			})

			t.Run("another session's write between read and write is still FS_STALE_VERSION; disk keeps it", func(t *testing.T) {
				ws := wrBase(t)
				p := wrPut(t, filepath.Join(ws, "a.txt"), "shared\n")
				e := env(t, ws)
				a, b := session.New("a", ws), session.New("b", ws)
				e.mustRead(a, "a.txt")
				e.mustRead(b, "a.txt")
				wrOK(t, e.write(b, map[string]any{"file_path": "a.txt", "content": "from b\n"}))
				res := e.write(a, map[string]any{"file_path": "a.txt", "content": "from a\n"})
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot write "`+p+`": file changed since it was read — re-read the file, then retry`)
				assert.Equal(t, "from b\n", wrDisk(t, p))
			})
		})
	}
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
				assert.Equal(t, fs.ReplaceSeen(fs.Observation{Version: v1}), e.fs.writeCalls()[0].Intent, "the last recorded observation wins")
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

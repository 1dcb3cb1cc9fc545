//go:build linux

package fsbackend_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/journal"
)

func openJournal(t testing.TB, maxBytes int64) *journal.Journal {
	t.Helper()
	j, err := journal.Open(journal.Options{Dir: filepath.Join(t.TempDir(), "journal"), MaxBytes: maxBytes, Sync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func key(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func blob(t *testing.T, j *journal.Journal, hash string) []byte {
	t.Helper()
	r, _, err := j.OpenBlob(hash)
	require.NoError(t, err)
	defer r.Close() //nolint:errcheck // test
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return b
}

// Each mutation journals the prior state of what it changes, Applied,
// with the call's identity, and reports the change to the audit record.
func TestJournalEachMutation(t *testing.T) {
	old := []byte("old content\n")
	cases := []struct {
		name   string
		kind   journal.Kind
		setup  func(t *testing.T, dir string)
		run    func(t *testing.T, f *fslocal.FileSystem, ctx context.Context) error
		paths  []string
		before []journal.Node // Path relative to dir; Hash of the content
	}{
		{
			name: "overwrite", kind: journal.Write,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), old, 0o640))
			},
			run: func(t *testing.T, f *fslocal.FileSystem, ctx context.Context) error {
				tg := resolve(t, f, "a.txt")
				_, err := f.WriteText(ctx, tg, "new\n", fs.WriteOptions{Intent: fs.WriteIntent{Kind: fs.ReplaceIfVersion, Version: versionOf(t, f, tg)}})
				return err
			},
			paths:  []string{"a.txt"},
			before: []journal.Node{{Path: "a.txt", Type: journal.File, Mode: 0o640, Hash: key(old), Size: int64(len(old))}},
		},
		{
			name: "create", kind: journal.Write,
			setup: func(*testing.T, string) {},
			run: func(t *testing.T, f *fslocal.FileSystem, ctx context.Context) error {
				_, err := f.WriteText(ctx, resolve(t, f, "new.txt"), "x", fs.WriteOptions{Intent: fs.WriteIntent{Kind: fs.CreateIfAbsent}})
				return err
			},
			paths: []string{"new.txt"},
		},
		{
			name: "edit", kind: journal.Edit,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), old, 0o600))
			},
			run: func(t *testing.T, f *fslocal.FileSystem, ctx context.Context) error {
				_, err := f.EditText(ctx, resolve(t, f, "a.txt"), fs.EditRequest{OldString: "old", NewString: "new"})
				return err
			},
			paths:  []string{"a.txt"},
			before: []journal.Node{{Path: "a.txt", Type: journal.File, Mode: 0o600, Hash: key(old), Size: int64(len(old))}},
		},
		{
			name: "recursive delete", kind: journal.Delete,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "src", "sub"), 0o750))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "sub", "f"), old, 0o604))
				require.NoError(t, os.Symlink("sub/f", filepath.Join(dir, "src", "link")))
				require.NoError(t, os.Chmod(filepath.Join(dir, "src"), 0o750))
			},
			run: func(t *testing.T, f *fslocal.FileSystem, ctx context.Context) error {
				_, err := f.Remove(ctx, resolve(t, f, "src"), fs.RemoveOptions{Recursive: true})
				return err
			},
			paths: []string{"src"},
			before: []journal.Node{
				{Path: "src", Type: journal.Dir, Mode: 0o750},
				{Path: "src/link", Type: journal.Symlink, Mode: 0o777, Link: "sub/f"},
				{Path: "src/sub", Type: journal.Dir, Mode: 0o750},
				{Path: "src/sub/f", Type: journal.File, Mode: 0o604, Hash: key(old), Size: int64(len(old))},
			},
		},
		{
			name: "move over", kind: journal.Move,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "s"), []byte("src"), 0o600))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "d"), old, 0o644))
			},
			run: func(t *testing.T, f *fslocal.FileSystem, ctx context.Context) error {
				_, err := f.Move(ctx, resolve(t, f, "s"), resolve(t, f, "d"), fs.MoveOptions{Overwrite: true})
				return err
			},
			paths: []string{"s", "d"},
			before: []journal.Node{
				{Path: "s", Type: journal.File, Mode: 0o600, Hash: key([]byte("src")), Size: 3},
				{Path: "d", Type: journal.File, Mode: 0o644, Hash: key(old), Size: int64(len(old))},
			},
		},
		{
			name: "mkdir", kind: journal.Mkdir,
			setup: func(*testing.T, string) {},
			run: func(t *testing.T, f *fslocal.FileSystem, ctx context.Context) error {
				_, err := f.Mkdir(ctx, resolve(t, f, "x/y"), fs.MkdirOptions{Parents: true})
				return err
			},
			paths: []string{"x/y"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := openJournal(t, 1<<20)
			f, dir := newFS(t, fslocal.Config{Journal: j})
			tc.setup(t, dir)
			rec := audit.Open(audit.Record{Session: "sess", Client: "cli", Tool: "tool_" + tc.name, Call: "c1"})
			require.NoError(t, tc.run(t, f, audit.NewContext(context.Background(), rec)))
			entries, err := j.List(journal.ListOptions{})
			require.NoError(t, err)
			require.Len(t, entries, 1)
			e := entries[0]
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, journal.Applied, e.Status)
			assert.Equal(t, "sess", e.Session)
			assert.Equal(t, "cli", e.Client)
			assert.Equal(t, "tool_"+tc.name, e.Tool)
			assert.Equal(t, "c1", e.Call)
			assert.True(t, e.Kept)
			var want []string
			for _, p := range tc.paths {
				want = append(want, filepath.Join(dir, p))
			}
			assert.Equal(t, want, e.Paths)
			require.Len(t, e.Before, len(tc.before))
			for i, w := range tc.before {
				got := e.Before[i]
				assert.Equal(t, filepath.Join(dir, w.Path), got.Path)
				assert.Equal(t, w.Type, got.Type, got.Path)
				assert.Equal(t, w.Mode, got.Mode, got.Path)
				assert.Equal(t, w.Link, got.Link, got.Path)
				assert.Equal(t, uint32(os.Getuid()), got.UID)
				assert.Equal(t, w.Hash, got.Hash, got.Path)
				if w.Type == journal.File {
					assert.Equal(t, w.Size, got.Size)
					if w.Path == "s" {
						assert.Equal(t, []byte("src"), blob(t, j, got.Hash))
					} else {
						assert.Equal(t, old, blob(t, j, got.Hash))
					}
				}
			}
			changes := rec.Record().Changes
			require.Len(t, changes, len(tc.paths))
			for i, c := range changes {
				assert.Equal(t, want[i], c.Path)
				assert.Equal(t, e.ID, c.Journal)
			}
		})
	}
}

// A dry run journals nothing.
func TestJournalDryRun(t *testing.T) {
	j := openJournal(t, 1<<20)
	f, dir := newFS(t, fslocal.Config{Journal: j})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("one\n"), 0o600))
	ctx := context.Background()
	_, err := f.WriteText(ctx, resolve(t, f, "a"), "two\n", fs.WriteOptions{DryRun: true})
	require.NoError(t, err)
	_, err = f.EditText(ctx, resolve(t, f, "a"), fs.EditRequest{OldString: "one", NewString: "two", DryRun: true})
	require.NoError(t, err)
	entries, err := j.List(journal.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.Equal(t, "one\n", readFile(t, filepath.Join(dir, "a")))
}

// A change whose prior content passes the cap proceeds; the result and
// the audit say it cannot be undone.
func TestJournalNotKept(t *testing.T) {
	j := openJournal(t, 4<<10)
	f, dir := newFS(t, fslocal.Config{Journal: j})
	big := strings.Repeat("y", 8<<10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte(big), 0o600))
	rec := audit.Open(audit.Record{Tool: "write"})
	out, err := f.WriteText(audit.NewContext(context.Background(), rec), resolve(t, f, "a"), "small\n", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "small\n", readFile(t, filepath.Join(dir, "a")))
	assert.Contains(t, out.Note, fmt.Sprintf("The prior content (%d bytes, over the journal cap of %d) was not kept in the journal: this change cannot be undone.", 8<<10, 4<<10))
	entries, err := j.List(journal.ListOptions{})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.False(t, entries[0].Kept)
	assert.Equal(t, journal.Applied, entries[0].Status)
	changes := rec.Record().Changes
	require.Len(t, changes, 1)
	assert.Empty(t, changes[0].Journal, "nothing keeps the prior state")
	assert.Empty(t, changes[0].Before, "a content over the cap is not read, so not hashed")
	assert.Equal(t, key([]byte("small\n")), changes[0].After)

	// A recursive delete of a tree over the cap, and a move over it.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tree", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tree", "sub", "big"), []byte(big), 0o600))
	rm, err := f.Remove(context.Background(), resolve(t, f, "tree"), fs.RemoveOptions{Recursive: true})
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Join(dir, "tree"))
	assert.Contains(t, rm.Note, "was not kept in the journal: this change cannot be undone.")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), []byte(big), 0o600))
	mv, err := f.Move(context.Background(), resolve(t, f, "a"), resolve(t, f, "big"), fs.MoveOptions{Overwrite: true})
	require.NoError(t, err)
	assert.Contains(t, mv.Note, "cannot be undone")
	assert.Equal(t, "small\n", readFile(t, filepath.Join(dir, "big")))
	ok, err := f.Remove(context.Background(), resolve(t, f, "big"), fs.RemoveOptions{})
	require.NoError(t, err)
	assert.Empty(t, ok.Note, "a change kept says nothing")
}

// A prior content far over the cap (a 100 GiB sparse file) is not read
// at all: each change proceeds, its entry keeps nothing and names no
// hash (reading it would have hashed it), and the result says it cannot be
// undone.
func TestJournalHugeNotRead(t *testing.T) {
	cases := []struct {
		name string
		run  func(f *fslocal.FileSystem, ctx context.Context, p string) (string, error)
		kind journal.Kind
		left bool // the file is still there, with the new content
	}{
		{"overwrite", func(f *fslocal.FileSystem, ctx context.Context, p string) (string, error) {
			out, err := f.WriteText(ctx, resolve(t, f, p), "small\n", fs.WriteOptions{})
			return out.Note, err
		}, journal.Write, true},
		{"delete", func(f *fslocal.FileSystem, ctx context.Context, p string) (string, error) {
			out, err := f.Remove(ctx, resolve(t, f, p), fs.RemoveOptions{})
			return out.Note, err
		}, journal.Delete, false},
		{"delete tree", func(f *fslocal.FileSystem, ctx context.Context, p string) (string, error) {
			out, err := f.Remove(ctx, resolve(t, f, filepath.Dir(p)), fs.RemoveOptions{Recursive: true})
			return out.Note, err
		}, journal.Delete, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := openJournal(t, 1<<20)
			f, dir := newFS(t, fslocal.Config{Journal: j})
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
			big := filepath.Join(dir, "d", "big")
			require.NoError(t, os.WriteFile(big, nil, 0o600))
			require.NoError(t, os.Truncate(big, 100<<30))
			note, err := tc.run(f, context.Background(), "d/big")
			require.NoError(t, err)
			assert.Contains(t, note, fmt.Sprintf("The prior content (%d bytes, over the journal cap of %d) was not kept", int64(100<<30), 1<<20))
			if tc.left {
				assert.Equal(t, "small\n", readFile(t, big))
			} else {
				assert.NoFileExists(t, big)
			}
			entries, err := j.List(journal.ListOptions{})
			require.NoError(t, err)
			require.Len(t, entries, 1)
			e := entries[0]
			assert.Equal(t, tc.kind, e.Kind)
			assert.False(t, e.Kept)
			assert.Zero(t, e.Bytes)
			var file *journal.Node
			for i := range e.Before {
				if e.Before[i].Type == journal.File {
					file = &e.Before[i]
				}
			}
			require.NotNil(t, file)
			assert.Equal(t, int64(100<<30), file.Size)
			assert.Empty(t, file.Hash, "never read: no hash")
		})
	}
}

// A journal that cannot append (a full disk, here a file size limit the
// segment passes) refuses every kind of change with FS_JOURNAL_FAILED and
// changes nothing.
func TestJournalFailureRefuses(t *testing.T) {
	j := openJournal(t, 1<<20)
	f, dir := newFS(t, fslocal.Config{Journal: j})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("keep me\n"), 0o640))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tree", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tree", "sub", "f"), []byte("f"), 0o600))
	// Grow the segment past the limit set below with one change.
	pad := strings.Repeat("p", 64<<10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pad"), []byte(pad), 0o600))
	ctx := context.Background()
	_, err := f.WriteText(ctx, resolve(t, f, "pad"), "x", fs.WriteOptions{})
	require.NoError(t, err)

	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_FSIZE, &old))
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 32 << 10, Max: old.Max}))
	defer func() { require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &old)) }()

	tg := resolve(t, f, "a")
	cases := map[string]func() error{
		"write": func() error {
			_, err := f.WriteText(ctx, tg, "changed\n", fs.WriteOptions{})
			return err
		},
		"create": func() error {
			_, err := f.WriteText(ctx, resolve(t, f, "new"), "new\n", fs.WriteOptions{})
			return err
		},
		"edit": func() error {
			_, err := f.EditText(ctx, tg, fs.EditRequest{OldString: "keep", NewString: "lose"})
			return err
		},
		"delete": func() error {
			_, err := f.Remove(ctx, resolve(t, f, "tree"), fs.RemoveOptions{Recursive: true})
			return err
		},
		"move": func() error {
			_, err := f.Move(ctx, tg, resolve(t, f, "b"), fs.MoveOptions{})
			return err
		},
		"mkdir": func() error {
			_, err := f.Mkdir(ctx, resolve(t, f, "d"), fs.MkdirOptions{})
			return err
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			err := run()
			require.ErrorIs(t, err, fs.ErrJournal)
			fe, ok := errors.AsType[*fs.Error](err)
			require.True(t, ok)
			assert.Equal(t, fs.CodeJournal, fe.Code)
			assert.Contains(t, fe.Message, "the journal could not keep its prior state, so nothing was changed")
			assert.Equal(t, "keep me\n", readFile(t, filepath.Join(dir, "a")))
			info, err := os.Stat(filepath.Join(dir, "a"))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o640), info.Mode().Perm())
			assert.Equal(t, "f", readFile(t, filepath.Join(dir, "tree", "sub", "f")))
			for _, absent := range []string{"new", "b", "d"} {
				_, err := os.Lstat(filepath.Join(dir, absent))
				assert.ErrorIs(t, err, os.ErrNotExist, absent)
			}
		})
	}
}

// Eight goroutines overwrite eight files through one backend with the
// journal on: every change is journaled once, Applied, with the content it
// replaced, and each file holds its latest entry's After.
func TestJournalConcurrentWrites(t *testing.T) {
	j := openJournal(t, 8<<20)
	f, dir := newFS(t, fslocal.Config{Journal: j})
	const writers, rounds = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			tg := resolve(t, f, fmt.Sprintf("f%d", w))
			for r := range rounds {
				if _, err := f.WriteText(context.Background(), tg, fmt.Sprintf("w%d r%d\n", w, r), fs.WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	entries, err := j.List(journal.ListOptions{})
	require.NoError(t, err)
	require.Len(t, entries, writers*rounds)
	seen := map[string]int{}
	latest := map[string]journal.Entry{}
	for _, e := range entries {
		assert.Equal(t, journal.Applied, e.Status)
		p := e.Paths[0]
		r := seen[p]
		seen[p]++
		if r == 0 {
			assert.Empty(t, e.Before, "a create has no prior state")
		} else {
			require.Len(t, e.Before, 1)
			assert.Equal(t, fmt.Sprintf("w%s r%d\n", strings.TrimPrefix(filepath.Base(p), "f"), r-1), string(blob(t, j, e.Before[0].Hash)))
		}
		latest[p] = e
	}
	for p, e := range latest {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, key(b), e.After[0].Hash, p)
	}
	assert.Len(t, latest, writers)
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, names, writers, "no temporary entry left")
}

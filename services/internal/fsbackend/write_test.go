//go:build linux

package fsbackend_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/internal/fsbackend"
)

func TestWriteText(t *testing.T) {
	type check func(t *testing.T, dir string, out fs.WriteOutcome)
	cases := []struct {
		name    string
		fixture []string
		path    string
		content string
		intent  func(t *testing.T, f *fslocal.FileSystem, tg fs.Target) fs.WriteIntent
		limit   int64
		code    fs.Code
		message string
		check   check
	}{
		{
			name: "L-53 createIfAbsent on a missing file creates it", path: "a.txt", content: "new",
			intent: func(*testing.T, *fslocal.FileSystem, fs.Target) fs.WriteIntent { return fs.CreateOnly() },
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, fs.OpCreate, out.Operation)
				assert.Equal(t, "new", readFile(t, filepath.Join(dir, "a.txt")))
			},
		},
		{
			name: "L-54 createIfAbsent on an existing file is FS_NOT_OBSERVED", fixture: []string{"a.txt: old"},
			path: "a.txt", content: "new",
			intent: func(*testing.T, *fslocal.FileSystem, fs.Target) fs.WriteIntent { return fs.CreateOnly() },
			code:   fs.CodeNotObserved, message: `cannot overwrite existing "<dp>" without reading it first`,
		},
		{
			name: "L-58 createIfAbsent onto a dangling symlink is FS_NOT_REGULAR_FILE", fixture: []string{"a.txt => nowhere"},
			path: "a.txt", content: "new",
			intent: func(*testing.T, *fslocal.FileSystem, fs.Target) fs.WriteIntent { return fs.CreateOnly() },
			code:   fs.CodeNotRegularFile, message: `cannot write "<dp>": not a regular file`,
		},
		{
			name: "L-59 replaceIfVersion at the current version updates", fixture: []string{"a.txt: old"},
			path: "a.txt", content: "new",
			intent: func(t *testing.T, f *fslocal.FileSystem, tg fs.Target) fs.WriteIntent {
				return fs.ReplaceSeen(fs.Observation{Version: versionOf(t, f, tg)})
			},
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, fs.OpUpdate, out.Operation)
				assert.Equal(t, "new", readFile(t, filepath.Join(dir, "a.txt")))
			},
		},
		{
			name: "L-60 replaceIfVersion after an out-of-band change is FS_STALE_VERSION", fixture: []string{"a.txt: old"},
			path: "a.txt", content: "new",
			intent: func(t *testing.T, f *fslocal.FileSystem, tg fs.Target) fs.WriteIntent {
				v := versionOf(t, f, tg)
				require.NoError(t, os.WriteFile(string(tg.Key), []byte("changed"), 0o644))
				return fs.ReplaceSeen(fs.Observation{Version: v})
			},
			code: fs.CodeStaleVersion, message: `cannot write "<dp>": file changed since it was read`,
		},
		{
			name: "L-61 replaceIfVersion after deletion is FS_STALE_VERSION and does not recreate", fixture: []string{"a.txt: old"},
			path: "a.txt", content: "new",
			intent: func(t *testing.T, f *fslocal.FileSystem, tg fs.Target) fs.WriteIntent {
				v := versionOf(t, f, tg)
				require.NoError(t, os.Remove(string(tg.Key)))
				return fs.ReplaceSeen(fs.Observation{Version: v})
			},
			code: fs.CodeStaleVersion, message: `cannot write "<dp>": file no longer exists`,
		},
		{
			name: "L-62 writing onto a directory is FS_NOT_REGULAR_FILE", fixture: []string{"d/"},
			path: "d", content: "x", code: fs.CodeNotRegularFile, message: `cannot write "<dp>": not a regular file`,
		},
		{
			name: "L-62 createIfAbsent onto a directory is FS_NOT_REGULAR_FILE", fixture: []string{"d/"},
			path: "d", content: "x",
			intent: func(*testing.T, *fslocal.FileSystem, fs.Target) fs.WriteIntent { return fs.CreateOnly() },
			code:   fs.CodeNotRegularFile, message: `cannot write "<dp>": not a regular file`,
		},
		{
			name: "L-63 L-64 no intent on a missing file creates with before nil", path: "a.txt", content: "x",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, fs.OpCreate, out.Operation)
				assert.Nil(t, out.Before)
				assert.Equal(t, "x", out.After)
			},
		},
		{
			name: "L-63 L-65 no intent on an existing file clobbers with before and after", fixture: []string{"a.txt: old"},
			path: "a.txt", content: "new",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, fs.OpUpdate, out.Operation)
				assert.Equal(t, strp("old"), out.Before)
				assert.Equal(t, "new", out.After)
				assert.Equal(t, "new", readFile(t, filepath.Join(dir, "a.txt")))
			},
		},
		{
			name: "L-66 CRLF overwrite reports LF texts and writes the raw content", fixture: []string{"a.txt: a\r\nb\r\nc\r\n"},
			path: "a.txt", content: "a\r\nB\r\nc\r\n",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, strp("a\nb\nc\n"), out.Before)
				assert.Equal(t, "a\nB\nc\n", out.After)
				assert.Equal(t, "a\r\nB\r\nc\r\n", readFile(t, filepath.Join(dir, "a.txt")))
			},
		},
		{
			name: "L-67 overwrite of a binary file succeeds with before nil", fixture: []string{"a.txt: \x00\x01\x02"},
			path: "a.txt", content: "text",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, fs.OpUpdate, out.Operation)
				assert.Nil(t, out.Before)
			},
		},
		{
			name: "L-68 overwrite of an invalid UTF-8 file succeeds with before nil", fixture: []string{"a.txt: h\xffi"},
			path: "a.txt", content: "text",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) { assert.Nil(t, out.Before) },
		},
		{
			name: "L-69 prior file exactly at the limit gives before nil", fixture: []string{"a.txt: 12345678"},
			path: "a.txt", content: "new", limit: 8,
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Nil(t, out.Before)
				assert.Equal(t, "new", readFile(t, filepath.Join(dir, "a.txt")))
			},
		},
		{
			name: "L-70 new content exactly at the limit gives before nil", fixture: []string{"a.txt: 1234"},
			path: "a.txt", content: "abcdefgh", limit: 8,
			check: func(t *testing.T, dir string, out fs.WriteOutcome) { assert.Nil(t, out.Before) },
		},
		{
			name: "L-71 the limit counts UTF-8 bytes, not characters", fixture: []string{"a.txt: 1234"},
			path: "a.txt", content: "你好吗", limit: 8,
			check: func(t *testing.T, dir string, out fs.WriteOutcome) { assert.Nil(t, out.Before) },
		},
		{
			name: "L-72 both sides below the limit keep before", fixture: []string{"a.txt: 1234567"},
			path: "a.txt", content: "new", limit: 8,
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, strp("1234567"), out.Before)
				assert.Equal(t, "new", out.After)
			},
		},
		{
			name: "L-89 a CRLF basis strictly below the limit is normalized", fixture: []string{"a.txt: a\r\nb"},
			path: "a.txt", content: "x", limit: 5,
			check: func(t *testing.T, dir string, out fs.WriteOutcome) { assert.Equal(t, strp("a\nb"), out.Before) },
		},
		{
			name: "L-89 a basis equal to the limit is nil", fixture: []string{"a.txt: a\r\nb"},
			path: "a.txt", content: "x", limit: 4,
			check: func(t *testing.T, dir string, out fs.WriteOutcome) { assert.Nil(t, out.Before) },
		},
		{
			name: "L-92 a NUL anywhere in the basis gives before nil", fixture: []string{"a.txt: abc\x00"},
			path: "a.txt", content: "x",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) { assert.Nil(t, out.Before) },
		},
		{
			name: "decision 4 a byte-order mark is not part of before or after", fixture: []string{"a.txt: \ufeffold"},
			path: "a.txt", content: "\ufeffnew",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, strp("old"), out.Before)
				assert.Equal(t, "new", out.After)
				assert.Equal(t, "\ufeffnew", readFile(t, filepath.Join(dir, "a.txt")))
			},
		},
		{
			name: "L-81 missing parents are created", path: "nested/deep/a.txt", content: "x",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Equal(t, "x", readFile(t, filepath.Join(dir, "nested/deep/a.txt")))
			},
		},
		{
			name: "empty content is a legal write", path: "empty.txt", content: "",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				assert.Empty(t, readFile(t, filepath.Join(dir, "empty.txt")))
			},
		},
		{
			name: "Z-2 an unconditional write replaces a dangling symlink itself", fixture: []string{"a.txt => nowhere"},
			path: "a.txt", content: "x",
			check: func(t *testing.T, dir string, out fs.WriteOutcome) {
				info, err := os.Lstat(filepath.Join(dir, "a.txt"))
				require.NoError(t, err)
				assert.True(t, info.Mode().IsRegular())
				assert.NoFileExists(t, filepath.Join(dir, "nowhere"))
			},
		},
		{
			name: "a path through a regular file is FS_NOT_FOUND", fixture: []string{"afile: x"},
			path: "afile/child.txt", content: "x", code: fs.CodeNotFound,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{DiffBasisMaxBytes: tc.limit})
			fixture.Build(t, dir, tc.fixture...)
			tg, err := f.Resolve(context.Background(), tc.path, fs.ResolveOptions{})
			if err != nil {
				require.NotEmpty(t, tc.code, "resolve failed: %v", err)
				assert.EqualValues(t, tc.code, fs.CodeOf(err))
				return
			}
			intent := fs.UnconditionalWrite()
			if tc.intent != nil {
				intent = tc.intent(t, f, tg)
			}
			before := fixture.Snapshot(t, dir)
			out, err := f.WriteText(context.Background(), tg, tc.content, fs.WriteOptions{Intent: intent})
			assert.Empty(t, fixture.Residue(t, dir))
			assert.Zero(t, fsbackend.LockTableSize(f))
			if tc.code != "" {
				require.Error(t, err)
				assert.EqualValues(t, tc.code, fs.CodeOf(err), "error: %v", err)
				if tc.message != "" {
					assert.Equal(t, expand(tc.message, tg), err.Error())
				}
				assert.Equal(t, before, fixture.Snapshot(t, dir), "a failed write changed the disk")
				return
			}
			require.NoError(t, err)
			info, err := f.Stat(context.Background(), tg)
			require.NoError(t, err)
			assert.Equal(t, info.Version, out.Version, "L-73 the returned version is the fresh one")
			if tc.check != nil {
				tc.check(t, dir, out)
			}
		})
	}
}

// expand replaces <dp> in a spec message with the target's display path.
func expand(msg string, tg fs.Target) string {
	out := []byte{}
	for i := 0; i < len(msg); i++ {
		if msg[i] == '<' && len(msg) >= i+4 && msg[i:i+4] == "<dp>" {
			out = append(out, tg.DisplayPath...)
			i += 3
			continue
		}
		out = append(out, msg[i])
	}
	return string(out)
}

func TestWriteTextModes(t *testing.T) {
	withUmask(t)
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "kept.txt: old")
	require.NoError(t, os.Chmod(filepath.Join(dir, "kept.txt"), 0o640))
	_, err := f.WriteText(context.Background(), resolve(t, f, "kept.txt"), "new", fs.WriteOptions{})
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, "kept.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "L-78 the existing mode is preserved")

	_, err = f.WriteText(context.Background(), resolve(t, f, "fresh.txt"), "new", fs.WriteOptions{})
	require.NoError(t, err)
	info, err = os.Stat(filepath.Join(dir, "fresh.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "spec difference 9: a new file is 0666 under the umask (022), superseding L-79")
}

func TestWriteTextAborted(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	tg := resolve(t, f, "nested/a.txt")
	_, err := f.WriteText(cancelled(), tg, "x", fs.WriteOptions{})
	require.ErrorIs(t, err, fs.ErrAborted)
	assert.Equal(t, "write aborted", err.Error())
	assert.NoDirExists(t, filepath.Join(dir, "nested"), "L-74 L-82 nothing is created")
	assert.Zero(t, fsbackend.LockTableSize(f))
}

func TestWriteTextSameSizeRewriteChangesVersion(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.txt: aaaa")
	p := filepath.Join(dir, "a.txt")
	info, err := os.Stat(p)
	require.NoError(t, err)
	tg := resolve(t, f, "a.txt")
	v0 := versionOf(t, f, tg)
	_, err = f.WriteText(context.Background(), tg, "bbbb", fs.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Chtimes(p, info.ModTime(), info.ModTime()))
	assert.NotEqual(t, v0, versionOf(t, f, tg), "L-19")
}

// TestWriteTextGuardedCreateRaces covers L-55..L-57: a competitor appears at
// the target between the probe and the no-replace publication.
func TestWriteTextGuardedCreateRaces(t *testing.T) {
	cases := []struct {
		name     string
		viaLink  bool
		compete  func(p string) error
		code     fs.Code
		preserve func(t *testing.T, p string)
	}{
		{
			name:    "L-55 a racing file is FS_NOT_OBSERVED and preserved",
			compete: func(p string) error { return os.WriteFile(p, []byte("competitor"), 0o644) },
			code:    fs.CodeNotObserved,
			preserve: func(t *testing.T, p string) {
				assert.Equal(t, "competitor", readFile(t, p))
			},
		},
		{
			name:    "L-56 through a symlinked directory the message uses the display path",
			viaLink: true,
			compete: func(p string) error { return os.WriteFile(p, []byte("competitor"), 0o644) },
			code:    fs.CodeNotObserved,
			preserve: func(t *testing.T, p string) {
				assert.Equal(t, "competitor", readFile(t, p))
			},
		},
		{
			name:    "L-57 a racing directory is FS_NOT_REGULAR_FILE and preserved",
			compete: func(p string) error { return os.Mkdir(p, 0o755) },
			code:    fs.CodeNotRegularFile,
			preserve: func(t *testing.T, p string) {
				assert.DirExists(t, p)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, "real/", "linked => real")
			rel := "real/a.txt"
			if tc.viaLink {
				rel = "linked/a.txt"
			}
			tg := resolve(t, f, rel)
			inReal := filepath.Join(dir, "real/a.txt")
			fsbackend.SetAfterStage(f, func(string, string) { require.NoError(t, tc.compete(inReal)) })
			_, err := f.WriteText(context.Background(), tg, "mine", fs.WriteOptions{Intent: fs.CreateOnly()})
			require.Error(t, err)
			assert.EqualValues(t, tc.code, fs.CodeOf(err))
			if tc.code == fs.CodeNotObserved {
				assert.Equal(t, `cannot overwrite existing "`+tg.DisplayPath+`" without reading it first`, err.Error())
			} else {
				assert.Equal(t, `cannot write "`+tg.DisplayPath+`": not a regular file`, err.Error())
			}
			tc.preserve(t, inReal)
			assert.Empty(t, fixture.Residue(t, dir))
			assert.Zero(t, fsbackend.LockTableSize(f))
		})
	}
}

// TestWriteTextConcurrentGuardedWriters covers L-76: two writers at one
// observed version, exactly one wins.
func TestWriteTextConcurrentGuardedWriters(t *testing.T) {
	for range 20 {
		f, dir := newFS(t, fslocal.Config{})
		fixture.Build(t, dir, "a.txt: v0")
		tg := resolve(t, f, "a.txt")
		v := versionOf(t, f, tg)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = f.WriteText(context.Background(), tg, []string{"one", "two"}[i],
					fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: v})})
			})
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			if err == nil {
				won++
				assert.Equal(t, []string{"one", "two"}[i], readFile(t, filepath.Join(dir, "a.txt")))
				continue
			}
			assert.ErrorIs(t, err, fs.ErrStaleVersion)
		}
		assert.Equal(t, 1, won)
		assert.Zero(t, fsbackend.LockTableSize(f))
	}
}

func TestWriteTextErrorsAreStructured(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "d/")
	_, err := f.WriteText(context.Background(), resolve(t, f, "d"), "x", fs.WriteOptions{})
	fe, ok := errors.AsType[*fs.Error](err)
	require.True(t, ok)
	assert.Equal(t, "write", fe.Op)
	assert.Equal(t, filepath.Join(dir, "d"), fe.Path)
	assert.ErrorIs(t, err, fs.ErrNotRegularFile)
	assert.NotErrorIs(t, err, fs.ErrNotFound)
}

func TestWriteTextFailureLeavesNoParents(t *testing.T) {
	cases := []struct {
		name string
		path string
	}{
		{"a component over NAME_MAX under a missing directory", "nodir/deeper/" + strings.Repeat("n", 300)},
		{"a path over PATH_MAX", "nodir/" + strings.Repeat("d/", 2100) + "f"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			before := fixture.Snapshot(t, dir)
			tg, err := f.Resolve(context.Background(), tc.path, fs.ResolveOptions{})
			if err == nil {
				_, err = f.WriteText(context.Background(), tg, "x", fs.WriteOptions{})
			}
			require.Error(t, err)
			assert.EqualValues(t, fs.CodeIOError, fs.CodeOf(err), "error: %v", err)
			assert.Equal(t, before, fixture.Snapshot(t, dir), "nothing created")
		})
	}
	t.Run("a write aborted before publication removes the parents it made", func(t *testing.T) {
		f, dir := newFS(t, fslocal.Config{})
		tg := resolve(t, f, "made/deep/a.txt")
		ctx, cancel := context.WithCancel(context.Background())
		fsbackend.SetAfterStage(f, func(string, string) { cancel() })
		_, err := f.WriteText(ctx, tg, "mine", fs.WriteOptions{})
		require.ErrorIs(t, err, fs.ErrAborted)
		assert.NoDirExists(t, filepath.Join(dir, "made"))
	})
	t.Run("a guarded create that collides keeps the parents the competitor uses", func(t *testing.T) {
		f, dir := newFS(t, fslocal.Config{})
		tg := resolve(t, f, "made/deep/a.txt")
		fsbackend.SetAfterStage(f, func(string, string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "made/deep/a.txt"), []byte("competitor"), 0o644))
		})
		_, err := f.WriteText(context.Background(), tg, "mine", fs.WriteOptions{Intent: fs.CreateOnly()})
		require.ErrorIs(t, err, fs.ErrNotObserved)
		assert.Equal(t, "competitor", readFile(t, filepath.Join(dir, "made/deep/a.txt")), "non-empty parents stay")
	})
}

// TestWriteTextDryRun checks that a dry run reports the write it would make,
// conventions included, and leaves the disk as it was.
func TestWriteTextDryRun(t *testing.T) {
	cases := []struct {
		name    string
		fixture []string
		path    string
		content string
		op      fs.Operation
		before  *string
	}{
		{name: "a new file in a new directory is not created", path: "new/a.txt", content: "x\n", op: fs.OpCreate},
		{name: "an existing CRLF file is not replaced", fixture: []string{"a.txt: a\r\nb\r\n"}, path: "a.txt", content: "a\nc\n", op: fs.OpUpdate, before: strp("a\nb\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, tc.fixture...)
			before := fixture.Snapshot(t, dir)
			tg := resolve(t, f, tc.path)
			out, err := f.WriteText(context.Background(), tg, tc.content, fs.WriteOptions{DryRun: true})
			require.NoError(t, err)
			assert.Equal(t, tc.op, out.Operation)
			assert.Equal(t, tc.before, out.Before)
			assert.Equal(t, tc.content, out.After)
			assert.Equal(t, before, fixture.Snapshot(t, dir), "a dry run changed the disk")
			if tc.op == fs.OpUpdate {
				assert.Equal(t, versionOf(t, f, tg), out.Version)
			}
		})
	}
}

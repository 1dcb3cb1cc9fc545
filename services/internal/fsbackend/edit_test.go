//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/internal/fsbackend"
)

func TestEditText(t *testing.T) {
	// guard says how the request's version is chosen: "" no guard, "current"
	// the file's version before prepare runs, "stale" a version from before
	// an out-of-band change made by prepare.
	cases := []struct {
		name       string
		fixture    []string
		path       string
		req        fs.EditRequest
		guard      string
		prepare    func(t *testing.T, dir string)
		code       fs.Code
		message    string
		disk       string // expected bytes of a.txt afterwards ("" = not checked)
		before     string
		after      string
		replaced   int
		keepMode   os.FileMode
		checkModes bool
	}{
		{
			name: "L-96 a guarded edit at the current version applies", fixture: []string{"a.txt: hello world"},
			path: "a.txt", req: fs.EditRequest{OldString: "world", NewString: "there"}, guard: "current",
			disk: "hello there", before: "hello world", after: "hello there", replaced: 1,
		},
		{
			name: "L-97 a CRLF file is matched LF-normalized and written back CRLF", fixture: []string{"a.txt: a\r\nOLD\r\nb\r\n"},
			path: "a.txt", req: fs.EditRequest{OldString: "OLD", NewString: "NEW"},
			disk: "a\r\nNEW\r\nb\r\n", before: "a\nOLD\nb\n", after: "a\nNEW\nb\n", replaced: 1,
		},
		{
			name: "L-98 the version guard is checked before matching", fixture: []string{"a.txt: hello world"},
			path: "a.txt", req: fs.EditRequest{OldString: "world", NewString: "x"}, guard: "stale",
			prepare: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello mars"), 0o644))
			},
			code: fs.CodeStaleVersion, message: `cannot edit "<dp>": file changed since it was read`, disk: "hello mars",
		},
		{
			name: "L-99 no guard edits the current content", fixture: []string{"a.txt: hello world"},
			path: "a.txt", req: fs.EditRequest{OldString: "world", NewString: "there"},
			prepare: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("bye world"), 0o644))
			},
			disk: "bye there", replaced: 1, before: "bye world", after: "bye there",
		},
		{
			name: "L-100 a missing target without guard is FS_STALE_VERSION",
			path: "a.txt", req: fs.EditRequest{OldString: "x", NewString: "y"},
			code: fs.CodeStaleVersion, message: `cannot edit "<dp>": file changed since it was read`,
		},
		{
			name: "L-100 a missing parent without guard is FS_STALE_VERSION",
			path: "gone/a.txt", req: fs.EditRequest{OldString: "x", NewString: "y"},
			code: fs.CodeStaleVersion,
		},
		{
			name: "L-101 an absent literal is FS_EDIT_NOT_FOUND", fixture: []string{"a.txt: hello"},
			path: "a.txt", req: fs.EditRequest{OldString: "zzz", NewString: "y"},
			code: fs.CodeEditNotFound, message: `old_string was not found in "<dp>"`, disk: "hello",
		},
		{
			name: "L-102 a guarded edit of a deleted file is FS_STALE_VERSION", fixture: []string{"a.txt: hello"},
			path: "a.txt", req: fs.EditRequest{OldString: "hello", NewString: "y"}, guard: "stale",
			prepare: func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "a.txt"))) },
			code:    fs.CodeStaleVersion,
		},
		{
			name: "L-103 a directory is FS_NOT_REGULAR_FILE before the version check", fixture: []string{"a.txt/"},
			path: "a.txt", req: fs.EditRequest{OldString: "x", NewString: "y", Version: "bogus"},
			code: fs.CodeNotRegularFile, message: `cannot edit "<dp>": not a regular file`,
		},
		{
			name: "L-104 an absent literal among several is FS_EDIT_NOT_FOUND", fixture: []string{"a.txt: a a a"},
			path: "a.txt", req: fs.EditRequest{OldString: "z", NewString: "y"},
			code: fs.CodeEditNotFound, disk: "a a a",
		},
		{
			name: "L-104 several matches without replace_all is FS_AMBIGUOUS_EDIT", fixture: []string{"a.txt: a a a"},
			path: "a.txt", req: fs.EditRequest{OldString: "a", NewString: "b"},
			code:    fs.CodeAmbiguousEdit,
			message: `old_string matched 3 times in "<dp>"; provide a more specific old_string or set replace_all to true`,
			disk:    "a a a",
		},
		{
			name: "L-105 replace_all replaces every match", fixture: []string{"a.txt: a a a"},
			path: "a.txt", req: fs.EditRequest{OldString: "a", NewString: "b", ReplaceAll: true},
			disk: "b b b", before: "a a a", after: "b b b", replaced: 3,
		},
		{
			name: "L-106 invalid UTF-8 is FS_NOT_TEXT and unchanged", fixture: []string{"a.txt: h\xffi"},
			path: "a.txt", req: fs.EditRequest{OldString: "h", NewString: "y"},
			code: fs.CodeNotText, message: `cannot edit "<dp>": invalid UTF-8 text`, disk: "h\xffi",
		},
		{
			name: "L-106 a NUL anywhere is FS_NOT_TEXT binary", fixture: []string{"a.txt: " + string(make([]byte, 9000)) + "h"},
			path: "a.txt", req: fs.EditRequest{OldString: "h", NewString: "y"},
			code: fs.CodeNotText, message: `cannot edit "<dp>": binary file`,
		},
		{
			name: "L-111 an empty old string is FS_EDIT_NOT_FOUND", fixture: []string{"a.txt: abc"},
			path: "a.txt", req: fs.EditRequest{OldString: "", NewString: "y"},
			code: fs.CodeEditNotFound, message: `old_string must be a non-empty string`, disk: "abc",
		},
		{
			name: "L-112 a CRLF multi-line literal matches the normalized text once", fixture: []string{"a.txt: zero\none\ntwo\n"},
			path: "a.txt", req: fs.EditRequest{OldString: "one\r\ntwo", NewString: "1\r\n2"},
			disk: "zero\n1\n2\n", replaced: 1, before: "zero\none\ntwo\n", after: "zero\n1\n2\n",
		},
		{
			name: "decision 10 (was L-114) a CRLF-dominant mixed file stays mixed", fixture: []string{"a.txt: a\r\nb\r\nc\nd\r\n"},
			path: "a.txt", req: fs.EditRequest{OldString: "b", NewString: "B"},
			disk: "a\r\nB\r\nc\nd\r\n", replaced: 1, before: "a\nb\nc\nd\n", after: "a\nB\nc\nd\n",
		},
		{
			name: "decision 10 (was L-114) an LF-dominant file keeps its stray CRLF", fixture: []string{"a.txt: a\nb\nc\r\n"},
			path: "a.txt", req: fs.EditRequest{OldString: "b", NewString: "B"},
			disk: "a\nB\nc\r\n", replaced: 1, before: "a\nb\nc\n", after: "a\nB\nc\n",
		},
		{
			name: "decision 4 a leading byte-order mark survives the edit", fixture: []string{"a.txt: \ufeffx = 1\r\n"},
			path: "a.txt", req: fs.EditRequest{OldString: "1", NewString: "2"},
			disk: "\ufeffx = 2\r\n", replaced: 1, before: "x = 1\n", after: "x = 2\n",
		},
		{
			name: "L-115 the file mode is preserved", fixture: []string{"a.txt: abc"},
			path: "a.txt", req: fs.EditRequest{OldString: "b", NewString: "B"},
			disk: "aBc", replaced: 1, before: "abc", after: "aBc", keepMode: 0o640, checkModes: true,
		},
		{
			name: "several edits apply in order, each to the text the previous left", fixture: []string{"a.txt: one two three"},
			path: "a.txt", req: fs.EditRequest{Edits: []fs.Replacement{{OldString: "one", NewString: "1"}, {OldString: "1 two", NewString: "12"}, {OldString: "e", NewString: "E", ReplaceAll: true}}},
			disk: "12 thrEE", before: "one two three", after: "12 thrEE", replaced: 4,
		},
		{
			name: "a failing later edit writes nothing (all or none)", fixture: []string{"a.txt: one two"},
			path: "a.txt", req: fs.EditRequest{Edits: []fs.Replacement{{OldString: "one", NewString: "1"}, {OldString: "one", NewString: "x"}}},
			code: fs.CodeEditNotFound, message: `edits[1]: old_string was not found in "<dp>"`, disk: "one two",
		},
		{
			name: "an ambiguous later edit names it and writes nothing", fixture: []string{"a.txt: a b"},
			path: "a.txt", req: fs.EditRequest{Edits: []fs.Replacement{{OldString: "b", NewString: "a"}, {OldString: "a", NewString: "c"}}},
			code: fs.CodeAmbiguousEdit, disk: "a b",
		},
		{
			name: "an empty old string among edits is refused before reading", fixture: []string{"a.txt: abc"},
			path: "a.txt", req: fs.EditRequest{Edits: []fs.Replacement{{OldString: "a", NewString: "b"}, {NewString: "x"}}},
			code: fs.CodeEditNotFound, message: "edits[1]: old_string must be a non-empty string", disk: "abc",
		},
		{
			name: "edits and old_string together are refused", fixture: []string{"a.txt: abc"},
			path: "a.txt", req: fs.EditRequest{OldString: "a", NewString: "b", Edits: []fs.Replacement{{OldString: "b", NewString: "c"}}},
			code: fs.CodeEditNotFound, disk: "abc",
		},
		{
			name: "a dry run returns the edit and writes nothing", fixture: []string{"a.txt: a\r\nOLD\r\n"},
			path: "a.txt", req: fs.EditRequest{OldString: "OLD", NewString: "NEW", DryRun: true},
			disk: "a\r\nOLD\r\n", before: "a\nOLD\n", after: "a\nNEW\n", replaced: 1,
		},
		{
			name: "a dry run is still guarded", fixture: []string{"a.txt: hello world"},
			path: "a.txt", req: fs.EditRequest{OldString: "world", NewString: "x", DryRun: true}, guard: "stale",
			prepare: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello mars"), 0o644))
			},
			code: fs.CodeStaleVersion, disk: "hello mars",
		},
		{
			name: "deleting a match with an empty new string", fixture: []string{"a.txt: keep drop keep"},
			path: "a.txt", req: fs.EditRequest{OldString: " drop", NewString: ""},
			disk: "keep keep", replaced: 1, before: "keep drop keep", after: "keep keep",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, tc.fixture...)
			if tc.checkModes {
				require.NoError(t, os.Chmod(filepath.Join(dir, "a.txt"), tc.keepMode))
			}
			tg := resolve(t, f, tc.path)
			req := tc.req
			if tc.guard != "" {
				req.Version = versionOf(t, f, tg)
			}
			if tc.prepare != nil {
				tc.prepare(t, dir)
			}
			before := fixture.Snapshot(t, dir)
			out, err := f.EditText(context.Background(), tg, req)
			assert.Empty(t, fixture.Residue(t, dir))
			assert.Zero(t, fsbackend.LockTableSize(f))
			if tc.code != "" {
				require.Error(t, err)
				assert.EqualValues(t, tc.code, fs.CodeOf(err), "error: %v", err)
				if tc.message != "" {
					assert.Equal(t, expand(tc.message, tg), err.Error())
				}
				assert.Equal(t, before, fixture.Snapshot(t, dir), "a failed edit changed the disk")
				if tc.disk != "" {
					assert.Equal(t, tc.disk, readFile(t, filepath.Join(dir, "a.txt")))
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.disk, readFile(t, filepath.Join(dir, "a.txt")))
			assert.Equal(t, tc.before, out.Before)
			assert.Equal(t, tc.after, out.After)
			assert.Equal(t, tc.replaced, out.Replacements)
			assert.Equal(t, versionOf(t, f, tg), out.Version)
			if tc.checkModes {
				info, err := os.Stat(filepath.Join(dir, "a.txt"))
				require.NoError(t, err)
				assert.Equal(t, tc.keepMode, info.Mode().Perm())
			}
		})
	}
}

func TestEditTextAborted(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.txt: hello")
	_, err := f.EditText(cancelled(), resolve(t, f, "a.txt"), fs.EditRequest{OldString: "hello", NewString: "x"})
	require.ErrorIs(t, err, fs.ErrAborted)
	assert.Equal(t, "edit aborted", err.Error())
	assert.Equal(t, "hello", readFile(t, filepath.Join(dir, "a.txt")), "L-108")
	assert.Zero(t, fsbackend.LockTableSize(f))
}

func TestEditTextReturnedVersionGuardsTheNextEdit(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.txt: one two")
	tg := resolve(t, f, "a.txt")
	out, err := f.EditText(context.Background(), tg, fs.EditRequest{OldString: "one", NewString: "ONE", Version: versionOf(t, f, tg)})
	require.NoError(t, err)
	_, err = f.EditText(context.Background(), tg, fs.EditRequest{OldString: "two", NewString: "TWO", Version: out.Version})
	require.NoError(t, err, "L-109")
	assert.Equal(t, "ONE TWO", readFile(t, filepath.Join(dir, "a.txt")))
}

func TestEditTextThroughSymlink(t *testing.T) {
	t.Run("L-117 a version from the real path guards an edit via the link", func(t *testing.T) {
		f, dir := newFS(t, fslocal.Config{})
		fixture.Build(t, dir, "real.txt: hello", "link.txt => real.txt")
		v := versionOf(t, f, resolve(t, f, "real.txt"))
		_, err := f.EditText(context.Background(), resolve(t, f, "link.txt"), fs.EditRequest{OldString: "hello", NewString: "bye", Version: v})
		require.NoError(t, err)
		assert.Equal(t, "bye", readFile(t, filepath.Join(dir, "real.txt")))
		info, err := os.Lstat(filepath.Join(dir, "link.txt"))
		require.NoError(t, err)
		assert.Equal(t, os.ModeSymlink, info.Mode().Type(), "the link stays a link")
	})
	t.Run("L-118 a change after the version was taken is stale via the link", func(t *testing.T) {
		f, dir := newFS(t, fslocal.Config{})
		fixture.Build(t, dir, "real.txt: hello", "link.txt => real.txt")
		v := versionOf(t, f, resolve(t, f, "real.txt"))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "real.txt"), []byte("hello!"), 0o644))
		_, err := f.EditText(context.Background(), resolve(t, f, "link.txt"), fs.EditRequest{OldString: "hello", NewString: "bye", Version: v})
		assert.ErrorIs(t, err, fs.ErrStaleVersion)
		assert.Equal(t, "hello!", readFile(t, filepath.Join(dir, "real.txt")))
	})
}

// TestEditTextConcurrentGuards covers L-107 and L-110: two guarded mutations
// at one version, exactly one wins, locks released.
func TestEditTextConcurrentGuards(t *testing.T) {
	for _, mixed := range []bool{false, true} {
		for range 20 {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, "a.txt: base")
			tg := resolve(t, f, "a.txt")
			v := versionOf(t, f, tg)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			wg.Go(func() {
				_, errs[0] = f.EditText(context.Background(), tg, fs.EditRequest{OldString: "base", NewString: "edit", Version: v})
			})
			wg.Go(func() {
				if mixed {
					_, errs[1] = f.WriteText(context.Background(), tg, "write", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: v})})
					return
				}
				_, errs[1] = f.EditText(context.Background(), tg, fs.EditRequest{OldString: "base", NewString: "other", Version: v})
			})
			wg.Wait()
			failed := 0
			for _, err := range errs {
				if err != nil {
					failed++
					assert.ErrorIs(t, err, fs.ErrStaleVersion)
				}
			}
			assert.Equal(t, 1, failed, "exactly one wins")
			assert.Contains(t, []string{"edit", "other", "write"}, readFile(t, filepath.Join(dir, "a.txt")))
			assert.Zero(t, fsbackend.LockTableSize(f))
		}
	}
}

func TestEditTextMaxBytes(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.txt: 0123456789")
	_, err := f.EditText(context.Background(), resolve(t, f, "a.txt"), fs.EditRequest{OldString: "0", NewString: "x", MaxBytes: 9})
	require.ErrorIs(t, err, fs.ErrTooLarge)
	assert.Equal(t, `cannot edit "`+filepath.Join(dir, "a.txt")+`": 10 bytes exceeds the 9-byte limit`, err.Error())
	assert.Equal(t, "0123456789", readFile(t, filepath.Join(dir, "a.txt")))
	_, err = f.EditText(context.Background(), resolve(t, f, "a.txt"), fs.EditRequest{OldString: "0", NewString: "x", MaxBytes: 10})
	require.NoError(t, err, "the limit is inclusive")
}

//go:build linux

package toolfs_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// TestEdit covers T-62..T-74 (and the edit side of T-33 and the
// T-remedies): the exact text, the structured value with its diff, the guard
// handed to the backend, and the disk.
func TestEdit(t *testing.T) {
	type env = wrCaseEnv
	tests := []wrCase{
		{
			name:  "T-62 after a read, a -> b: exact text, value, guard of the read's version",
			files: []string{"a.txt: a"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				x.v = x.e.version(filepath.Join(x.ws, "a.txt"))
				x.fp = wrFingerprint(t, filepath.Join(x.ws, "a.txt"))
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, "The file "+dp+" has been updated successfully.", res.Text)
				assert.Equal(t, toolfs.EditValue{
					Path: dp, Before: "a", After: "b", Replacements: 1,
					Diff: "--- a" + dp + "\n+++ b" + dp + "\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
				}, res.Value)
				assert.Equal(t, []fs.EditRequest{{OldString: "a", NewString: "b", Version: x.v, Content: x.fp, MaxBytes: toolfs.DefaultWriteMaxBytes}}, x.e.fs.editCalls())
				assert.Equal(t, "b", wrDisk(t, dp))
			},
		},
		{
			name:  "T-63 replace_all: exact text, every occurrence replaced",
			files: []string{"a.txt: a a a"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": true},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, "The file "+dp+" has been updated. All occurrences were successfully replaced.", res.Text)
				v, ok := res.Value.(toolfs.EditValue)
				require.True(t, ok)
				assert.Equal(t, 3, v.Replacements)
				assert.Equal(t, "b b b", v.After)
				require.Len(t, x.e.fs.editCalls(), 1)
				assert.True(t, x.e.fs.editCalls()[0].ReplaceAll)
				assert.Equal(t, "b b b", wrDisk(t, dp))
			},
		},
		{
			name:  "T-64 old_string equal to new_string is refused before the backend",
			files: []string{"a.txt: same"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "same", "new_string": "same"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: old_string and new_string must differ")
				assert.Empty(t, x.e.fs.editCalls())
			},
		},
		{
			name:  "T-65 an empty old_string is refused at the tool level",
			files: []string{"a.txt: x"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "", "new_string": "y"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: old_string must be a non-empty string")
				assert.Empty(t, x.e.fs.editCalls())
			},
		},
		{
			name: "T-65 a blank file_path is refused",
			args: map[string]any{"file_path": " \t", "old_string": "a", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: file_path must be a non-empty string")
			},
		},
		{
			name: "T-65 order: file_path before an empty old_string",
			args: map[string]any{"file_path": "", "old_string": "", "new_string": ""},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: file_path must be a non-empty string")
			},
		},
		{
			name: "T-65 order: an empty old_string before equality",
			args: map[string]any{"file_path": "a.txt", "old_string": "", "new_string": ""},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: old_string must be a non-empty string")
			},
		},
		{
			name:  "section 1 a non-boolean replace_all is an argument error",
			files: []string{"a.txt: a"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"},
			check: func(t *testing.T, x *env, res tool.Result) {
				assert.True(t, res.IsError)
				assert.EqualValues(t, errcode.InvalidArgument, res.Code)
				assert.Contains(t, res.Text, "replace_all")
				assert.Empty(t, x.e.fs.editCalls())
			},
		},
		{
			name:  "T-66 a never-read file with a session is FS_NOT_OBSERVED from the policy, with the read remedy",
			files: []string{"a.txt: hello"},
			args:  map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeNotObserved, `Error: edit requires reading "`+dp+`" first — read the file, then retry`)
				assert.Empty(t, x.e.fs.editCalls(), "the policy refuses before the backend")
			},
		},
		{
			name:      "O-04 a call with no agent can never edit through the policy",
			noSession: true,
			files:     []string{"a.txt: hello"},
			args:      map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeNotObserved, `Error: edit requires reading "`+dp+`" first — read the file, then retry`)
			},
		},
		{
			name:  "T-67 policy deployment: a unique replacement after a read lands on disk",
			files: []string{"a.txt: one two three\n"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "two", "new_string": "2"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Equal(t, "one 2 three\n", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name:  "T-68 a windowed read (line 1 of 20) authorizes an edit of line 12",
			files: []string{"a.txt: " + wrLines(20, nil)},
			prep: func(t *testing.T, x *env) {
				res := x.e.read(x.sess, map[string]any{"file_path": "a.txt", "offset": 1, "limit": 1})
				require.False(t, res.IsError, res.Text)
				require.Contains(t, res.Text, "(Showing lines 1-1 of 20")
				require.NotContains(t, res.Text, "line12")
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "line12\n", "new_string": "LINE12\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Equal(t, wrLines(20, map[int]string{12: "LINE12"}), wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name:  "T-69 windowed read, then an external change removing the literal: stale before matching",
			files: []string{"a.txt: " + wrLines(20, nil)},
			prep: func(t *testing.T, x *env) {
				res := x.e.read(x.sess, map[string]any{"file_path": "a.txt", "offset": 1, "limit": 1})
				require.False(t, res.IsError, res.Text)
				wrPut(t, filepath.Join(x.ws, "a.txt"), wrLines(20, map[int]string{12: "gone"}))
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "line12", "new_string": "LINE12"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot edit "`+dp+`": file changed since it was read — re-read the file, then retry`)
				assert.Equal(t, wrLines(20, map[int]string{12: "gone"}), wrDisk(t, dp))
			},
		},
		{
			name:  "T-70 a stale edit, a re-read, and the retry succeeds",
			files: []string{"a.txt: hello world"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				wrPut(t, filepath.Join(x.ws, "a.txt"), "hello brave world")
				res := x.e.edit(x.sess, map[string]any{"file_path": "a.txt", "old_string": "world", "new_string": "there"})
				require.EqualValues(t, fs.CodeStaleVersion, res.Code, res.Text)
				require.Equal(t, "hello brave world", wrDisk(t, filepath.Join(x.ws, "a.txt")))
				x.e.mustRead(x.sess, "a.txt")
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "world", "new_string": "there"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Equal(t, "hello brave there", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name:  "T-71 an ambiguous literal without replace_all is FS_AMBIGUOUS_EDIT and changes nothing",
			files: []string{"a.txt: a a a"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeAmbiguousEdit, `Error: old_string matched 3 times in "`+dp+`"; provide a more specific old_string or set replace_all to true`)
				assert.Equal(t, "a a a", wrDisk(t, dp))
			},
		},
		{
			name:  "T-71 the same literal with replace_all gives b b b",
			files: []string{"a.txt: a a a"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": true},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Equal(t, "b b b", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name: "T-72 write then edit with no read in between is allowed",
			prep: func(t *testing.T, x *env) {
				wrOK(t, x.e.write(x.sess, map[string]any{"file_path": "a.txt", "content": "one"}))
				x.v = x.e.version(filepath.Join(x.ws, "a.txt"))
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "ONE"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				require.Len(t, x.e.fs.editCalls(), 1)
				assert.Equal(t, x.v, x.e.fs.editCalls()[0].Version, "the write's own version guards the edit")
				assert.Equal(t, "ONE", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name:  "O-06 consecutive edits need no re-read",
			files: []string{"a.txt: one two"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				wrOK(t, x.e.edit(x.sess, map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "ONE"}))
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "two", "new_string": "TWO"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Equal(t, "ONE TWO", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name:  "T-73 bare deployment: an edit of an unread file succeeds, unguarded",
			bare:  true,
			files: []string{"a.txt: hello"},
			args:  map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Equal(t, []fs.EditRequest{{OldString: "hello", NewString: "bye", MaxBytes: toolfs.DefaultWriteMaxBytes}}, x.e.fs.editCalls())
				assert.Equal(t, "bye", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name: "T-73 bare deployment: an edit of a missing file is FS_STALE_VERSION with the stale remedy",
			bare: true,
			args: map[string]any{"file_path": "missing.txt", "old_string": "a", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "missing.txt")
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot edit "`+dp+`": file changed since it was read — re-read the file, then retry`)
				assert.NoFileExists(t, dp)
			},
		},
		{
			name:  "T-73 bare deployment: an absent literal is FS_EDIT_NOT_FOUND",
			bare:  true,
			files: []string{"a.txt: hello"},
			args:  map[string]any{"file_path": "a.txt", "old_string": "zzz", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeEditNotFound, `Error: old_string was not found in "`+dp+`"`)
				assert.Equal(t, "hello", wrDisk(t, dp))
			},
		},
		{
			name:  "T-74 a direct fs.ReadText (bypassing the tool) records nothing: the edit is FS_NOT_OBSERVED",
			files: []string{"a.txt: hello"},
			prep: func(t *testing.T, x *env) {
				text, err := x.e.fs.ReadText(context.Background(), x.e.target(filepath.Join(x.ws, "a.txt")))
				require.NoError(t, err)
				require.Equal(t, "hello", text)
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeNotObserved, `Error: edit requires reading "`+dp+`" first — read the file, then retry`)
				assert.Equal(t, "hello", wrDisk(t, dp))
			},
		},
		{
			name:  "T-87 the edit diff is a unified diff with 3 lines of context",
			files: []string{"a.txt: a\nb\nc\nOLD\nd\ne\nf\n"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "OLD", "new_string": "NEW"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, toolfs.EditValue{
					Path: dp, Before: "a\nb\nc\nOLD\nd\ne\nf\n", After: "a\nb\nc\nNEW\nd\ne\nf\n", Replacements: 1,
					Diff: "--- a" + dp + "\n+++ b" + dp + "\n@@ -1,7 +1,7 @@\n a\n b\n c\n-OLD\n+NEW\n d\n e\n f\n",
				}, res.Value)
			},
		},
		{
			name:  "L-97 a CRLF file keeps CRLF on disk; before and after are LF-normalized",
			files: []string{"a.txt: a\r\nOLD\r\nb\r\n"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": "OLD", "new_string": "NEW"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				v, ok := res.Value.(toolfs.EditValue)
				require.True(t, ok)
				assert.Equal(t, "a\nOLD\nb\n", v.Before)
				assert.Equal(t, "a\nNEW\nb\n", v.After)
				assert.Equal(t, "a\r\nNEW\r\nb\r\n", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name:  "section 1 new_string may be empty: the match is deleted",
			files: []string{"a.txt: keep drop keep"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "old_string": " drop", "new_string": ""},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Equal(t, "keep keep", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name:  "L-103 a directory target is FS_NOT_REGULAR_FILE with no remedy",
			bare:  true,
			files: []string{"dir/"},
			args:  map[string]any{"file_path": "dir", "old_string": "a", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "dir")
				wrFail(t, res, fs.CodeNotRegularFile, `Error: cannot edit "`+dp+`": not a regular file`)
			},
		},
		{
			name:  "T-remedies a provider FS_STALE_VERSION on edit gets the stale remedy",
			files: []string{"a.txt: a"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				x.e.fs.injectEdit(&fs.Error{Code: fs.CodeStaleVersion, Message: "blocked"})
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, fs.CodeStaleVersion, "Error: blocked — re-read the file, then retry")
			},
		},
		{
			name:  "T-remedies a provider FS_PERMISSION_DENIED on edit passes through unchanged",
			files: []string{"a.txt: a"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				x.e.fs.injectEdit(&fs.Error{Code: fs.CodePermissionDenied, Message: "nope"})
			},
			args: map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, fs.CodePermissionDenied, "Error: nope")
			},
		},
	}
	wrRunCases(t, tests, "edit")
}

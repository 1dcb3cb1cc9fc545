//go:build linux

package toolfs_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// TestEditSeveralAndDryRun covers edit's edits array (in order, all or none,
// never with the top-level strings) and its dry run, checking the disk.
func TestEditSeveralAndDryRun(t *testing.T) {
	type env = wrCaseEnv
	read := func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") }
	fails := func(code errcode.Code, text string) func(t *testing.T, x *env, res tool.Result) {
		return func(t *testing.T, x *env, res tool.Result) {
			require.True(t, res.IsError, res.Text)
			assert.EqualValues(t, code, res.Code)
			assert.Contains(t, res.Text, text)
			assert.Empty(t, x.e.fs.editCalls(), "refused before the backend")
		}
	}
	tests := []wrCase{
		{
			name: "edits apply in order, each to the previous result", files: []string{"a.txt: one two three"}, prep: read,
			args: map[string]any{"file_path": "a.txt", "edits": []any{
				map[string]any{"old_string": "one", "new_string": "1"},
				map[string]any{"old_string": "1 two", "new_string": "12"},
				map[string]any{"old_string": "e", "new_string": "E", "replace_all": true},
			}},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, "The file "+dp+" has been updated: 3 edits applied (4 replacements).", res.Text)
				assert.Equal(t, "12 thrEE", wrDisk(t, dp))
				v, ok := res.Value.(toolfs.EditValue)
				require.True(t, ok)
				assert.Equal(t, 4, v.Replacements)
				assert.Equal(t, "one two three", v.Before)
			},
		},
		{
			name: "a failing later edit leaves the file as it was", files: []string{"a.txt: one two"}, prep: read,
			args: map[string]any{"file_path": "a.txt", "edits": []any{
				map[string]any{"old_string": "one", "new_string": "1"},
				map[string]any{"old_string": "one", "new_string": "x"},
			}},
			check: func(t *testing.T, x *env, res tool.Result) {
				require.True(t, res.IsError)
				assert.EqualValues(t, fs.CodeEditNotFound, res.Code)
				assert.Contains(t, res.Text, "edits[1]: old_string was not found")
				assert.Equal(t, "one two", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name: "edits with old_string is refused", files: []string{"a.txt: a"}, prep: read,
			args:  map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b", "edits": []any{map[string]any{"old_string": "a", "new_string": "b"}}},
			check: fails(errcode.InvalidArgument, "provide either edits or old_string and new_string, not both"),
		},
		{
			name: "an empty edits array is refused", files: []string{"a.txt: a"}, prep: read,
			args:  map[string]any{"file_path": "a.txt", "edits": []any{}},
			check: fails(errcode.InvalidArgument, "edits must be a non-empty array of objects"),
		},
		{
			name: "an edit that is not an object is refused", files: []string{"a.txt: a"}, prep: read,
			args:  map[string]any{"file_path": "a.txt", "edits": []any{"a"}},
			check: fails(errcode.InvalidArgument, "edits[0] must be an object"),
		},
		{
			name: "an edit with equal strings is refused, named", files: []string{"a.txt: a"}, prep: read,
			args:  map[string]any{"file_path": "a.txt", "edits": []any{map[string]any{"old_string": "a", "new_string": "b"}, map[string]any{"old_string": "b", "new_string": "b"}}},
			check: fails(errcode.InvalidArgument, "edits[1].old_string and new_string must differ"),
		},
		{
			name: "an edit without new_string is refused, named", files: []string{"a.txt: a"}, prep: read,
			args:  map[string]any{"file_path": "a.txt", "edits": []any{map[string]any{"old_string": "a"}}},
			check: fails(errcode.InvalidArgument, "edits[0].new_string must be a string"),
		},
		{
			name: "a dry run returns the diff and writes nothing, nor observes", files: []string{"a.txt: a\r\nb\r\n"}, prep: read,
			args: map[string]any{"file_path": "a.txt", "old_string": "b", "new_string": "c", "dry_run": true},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.True(t, strings.HasPrefix(res.Text, "Dry run: "+dp+" would be updated; nothing was written.\n--- a"+dp), res.Text)
				assert.Contains(t, res.Text, "-b\n+c\n")
				assert.Equal(t, "a\r\nb\r\n", wrDisk(t, dp))
				v, ok := res.Value.(toolfs.EditValue)
				require.True(t, ok)
				assert.True(t, v.DryRun)
				// The session still holds the read's version: a real edit now applies.
				res = x.e.edit(x.sess, map[string]any{"file_path": "a.txt", "old_string": "b", "new_string": "c"})
				wrOK(t, res)
				assert.Equal(t, "a\r\nc\r\n", wrDisk(t, dp))
			},
		},
		{
			name: "a dry run without a read is refused like the edit", files: []string{"a.txt: a"},
			args: map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b", "dry_run": true},
			check: func(t *testing.T, x *env, res tool.Result) {
				require.True(t, res.IsError)
				assert.EqualValues(t, fs.CodeNotObserved, res.Code)
			},
		},
	}
	wrRunCases(t, tests, "edit")
}

// TestWriteDryRun checks write's dry run: the diff, nothing on disk, no
// observation; and that a denied write is denied in a dry run too.
func TestWriteDryRun(t *testing.T) {
	type env = wrCaseEnv
	tests := []wrCase{
		{
			name: "a dry-run create makes nothing", bare: true,
			args: map[string]any{"file_path": "d/new.txt", "content": "x\n", "dry_run": true},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "d/new.txt")
				wrOK(t, res)
				assert.Equal(t, "Dry run: "+dp+" would be created; nothing was written.\n--- /dev/null\n+++ b"+dp+"\n@@ -0,0 +1 @@\n+x\n", res.Text)
				assert.NoDirExists(t, filepath.Join(x.ws, "d"))
			},
		},
		{
			name: "a dry-run update of a read file diffs against it", files: []string{"a.txt: a\n"},
			prep: func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args: map[string]any{"file_path": "a.txt", "content": "b\n", "dry_run": true},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrOK(t, res)
				assert.Contains(t, res.Text, "-a\n+b\n")
				assert.Equal(t, "a\n", wrDisk(t, filepath.Join(x.ws, "a.txt")))
			},
		},
		{
			name: "a dry-run overwrite of an unread file is refused as the write is", files: []string{"a.txt: a\n"},
			args: map[string]any{"file_path": "a.txt", "content": "b\n", "dry_run": true},
			check: func(t *testing.T, _ *env, res tool.Result) {
				require.True(t, res.IsError)
				assert.EqualValues(t, fs.CodeNotObserved, res.Code)
			},
		},
	}
	wrRunCases(t, tests, "write")

	t.Run("a denied write is denied in a dry run", func(t *testing.T) {
		ws := wrBase(t)
		e := wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(sandbox.ReadOnly, ws)})
		res := e.write(session.New("s1", ws), map[string]any{"file_path": "a.txt", "content": "x", "dry_run": true})
		require.True(t, res.IsError)
		assert.EqualValues(t, fs.CodeSandboxDenied, res.Code)
		assert.Equal(t, wrDenial(sandbox.ReadOnly), res.Text)
		assert.NoFileExists(t, filepath.Join(ws, "a.txt"))
	})
}

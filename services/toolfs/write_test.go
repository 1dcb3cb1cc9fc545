//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// wrLines returns "line1\n" .. "line<n>\n", with line k replaced by
// repl[k] when present.
func wrLines(n int, repl map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := repl[i]; ok {
			b.WriteString(r + "\n")
			continue
		}
		b.WriteString("line" + strconv.Itoa(i) + "\n")
	}
	return b.String()
}

// TestWrite covers T-52..T-61 (and the write side of T-33 and the
// T-remedies): the exact text, the structured value with its diff, the
// intent handed to the backend, and the disk.
func TestWrite(t *testing.T) {
	type env = wrCaseEnv
	tests := []wrCase{
		{
			name: "T-52 a session's write to an unobserved target asks createIfAbsent and creates",
			args: map[string]any{"file_path": "a.txt", "content": "hi"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, true), res.Text)
				assert.Equal(t, toolfs.WriteValue{
					Path: dp, Operation: "create", Before: nil, After: "hi",
					Diff: "--- /dev/null\n+++ b" + dp + "\n@@ -0,0 +1 @@\n+hi\n\\ No newline at end of file\n",
				}, res.Value)
				require.Len(t, x.e.fs.writeCalls(), 1)
				assert.Equal(t, fs.WriteOptions{Intent: fs.CreateOnly()}, x.e.fs.writeCalls()[0], "createIfAbsent, no policy under fslocal")
				assert.Equal(t, "hi", wrDisk(t, dp))
				raw, err := json.Marshal(res.Value)
				require.NoError(t, err)
				assert.Contains(t, string(raw), `"operation":"create","before":null,"after":"hi"`, "section 1: before is null on create")
			},
		},
		{
			name: "T-53 a blank file_path is refused before the backend",
			args: map[string]any{"file_path": "   ", "content": "x"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: file_path must be a non-empty string")
				assert.Empty(t, x.e.fs.writeCalls())
			},
		},
		{
			name: "T-53 a missing file_path is refused",
			args: map[string]any{"content": "x"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: file_path must be a non-empty string")
			},
		},
		{
			name: "T-53 a non-string file_path is refused",
			args: map[string]any{"file_path": 7, "content": "x"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, errcode.InvalidArgument, "Error: file_path must be a non-empty string")
			},
		},
		{
			name: "section 1 a missing content is an argument error and creates nothing",
			args: map[string]any{"file_path": "a.txt"},
			check: func(t *testing.T, x *env, res tool.Result) {
				assert.True(t, res.IsError)
				assert.EqualValues(t, errcode.InvalidArgument, res.Code)
				assert.Contains(t, res.Text, "content")
				assert.Empty(t, x.e.fs.writeCalls())
			},
		},
		{
			name: "T-54 a provider FS_STALE_VERSION gets the stale remedy and keeps its code",
			prep: func(t *testing.T, x *env) {
				x.e.fs.injectWrite(&fs.Error{Code: fs.CodeStaleVersion, Message: "blocked"})
			},
			args: map[string]any{"file_path": "a.txt", "content": "hi"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, fs.CodeStaleVersion, "Error: blocked — re-read the file, then retry")
			},
		},
		{
			name: "T-remedies a provider FS_NOT_OBSERVED gets the read remedy",
			prep: func(t *testing.T, x *env) {
				x.e.fs.injectWrite(&fs.Error{Code: fs.CodeNotObserved, Message: "gate"})
			},
			args: map[string]any{"file_path": "a.txt", "content": "hi"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, fs.CodeNotObserved, "Error: gate — read the file, then retry")
			},
		},
		{
			name: "T-remedies other codes pass through unchanged",
			prep: func(t *testing.T, x *env) {
				x.e.fs.injectWrite(&fs.Error{Code: fs.CodeIOError, Message: "disk on fire"})
			},
			args: map[string]any{"file_path": "a.txt", "content": "hi"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, fs.CodeIOError, "Error: disk on fire")
			},
		},
		{
			name: "T-remedies a non-fs error passes through unchanged with no code",
			prep: func(t *testing.T, x *env) {
				x.e.fs.injectWrite(errors.New("plain failure"))
			},
			args: map[string]any{"file_path": "a.txt", "content": "hi"},
			check: func(t *testing.T, x *env, res tool.Result) {
				wrFail(t, res, "", "Error: plain failure")
			},
		},
		{
			name: "T-55 policy deployment: a new file gets exactly the bytes, and a /dev/null diff",
			args: map[string]any{"file_path": "a.txt", "content": "line one\nline two\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, true), res.Text)
				assert.Equal(t, toolfs.WriteValue{
					Path: dp, Operation: "create", After: "line one\nline two\n",
					Diff: "--- /dev/null\n+++ b" + dp + "\n@@ -0,0 +1,2 @@\n+line one\n+line two\n",
				}, res.Value)
				assert.Equal(t, "line one\nline two\n", wrDisk(t, dp))
			},
		},
		{
			name:  "T-56 policy deployment: overwriting an unread existing file is FS_NOT_OBSERVED with the read remedy",
			files: []string{"a.txt: old\n"},
			args:  map[string]any{"file_path": "a.txt", "content": "new\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeNotObserved, `Error: cannot overwrite existing "`+dp+`" without reading it first — read the file, then retry`)
				assert.Equal(t, []fs.WriteOptions{{Intent: fs.CreateOnly()}}, x.e.fs.writeCalls())
				assert.Equal(t, "old\n", wrDisk(t, dp), "the file is unchanged")
			},
		},
		{
			name:      "O-16 policy deployment with no agent: an existing file is never overwritten",
			noSession: true,
			files:     []string{"a.txt: old\n"},
			args:      map[string]any{"file_path": "a.txt", "content": "new\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeNotObserved, `Error: cannot overwrite existing "`+dp+`" without reading it first — read the file, then retry`)
				assert.Equal(t, "old\n", wrDisk(t, dp))
			},
		},
		{
			name:  "T-57 read then write replaces, under replaceIfVersion of the read's version, with an update diff",
			files: []string{"a.txt: one\ntwo\nthree\n"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				x.v = x.e.version(filepath.Join(x.ws, "a.txt"))
				x.fp = wrFingerprint(t, filepath.Join(x.ws, "a.txt"))
			},
			args: map[string]any{"file_path": "a.txt", "content": "one\nTWO\nthree\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, false), res.Text)
				assert.Equal(t, toolfs.WriteValue{
					Path: dp, Operation: "update", Before: wrStr("one\ntwo\nthree\n"), After: "one\nTWO\nthree\n",
					Diff: "--- a" + dp + "\n+++ b" + dp + "\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
				}, res.Value)
				assert.Equal(t, []fs.WriteOptions{{Intent: fs.ReplaceSeen(fs.Observation{Version: x.v, Content: x.fp})}}, x.e.fs.writeCalls())
				assert.Equal(t, "one\nTWO\nthree\n", wrDisk(t, dp))
			},
		},
		{
			name:  "T-58 read, external change, write is FS_STALE_VERSION with the stale remedy",
			files: []string{"a.txt: v1\n"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				wrPut(t, filepath.Join(x.ws, "a.txt"), "external v2\n")
			},
			args: map[string]any{"file_path": "a.txt", "content": "mine\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrFail(t, res, fs.CodeStaleVersion, `Error: cannot write "`+dp+`": file changed since it was read — re-read the file, then retry`)
				assert.Equal(t, "external v2\n", wrDisk(t, dp), "the external change survives")
			},
		},
		{
			name:  "T-59 following the stale remedy (re-read, retry) succeeds",
			files: []string{"a.txt: v1\n"},
			prep: func(t *testing.T, x *env) {
				x.e.mustRead(x.sess, "a.txt")
				wrPut(t, filepath.Join(x.ws, "a.txt"), "external v2\n")
				stale := x.e.write(x.sess, map[string]any{"file_path": "a.txt", "content": "mine\n"})
				require.EqualValues(t, fs.CodeStaleVersion, stale.Code, stale.Text)
				x.e.mustRead(x.sess, "a.txt")
			},
			args: map[string]any{"file_path": "a.txt", "content": "mine\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, false), res.Text)
				assert.Equal(t, "mine\n", wrDisk(t, dp))
			},
		},
		{
			name: "T-60 bare deployment: write creates a new file unconditionally",
			bare: true,
			args: map[string]any{"file_path": "a.txt", "content": "new"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, true), res.Text)
				assert.Equal(t, []fs.WriteOptions{{Intent: fs.UnconditionalWrite()}}, x.e.fs.writeCalls())
				assert.Equal(t, "new", wrDisk(t, dp))
			},
		},
		{
			name:  "T-60 bare deployment: write clobbers an unread existing file",
			bare:  true,
			files: []string{"a.txt: old\n"},
			args:  map[string]any{"file_path": "a.txt", "content": "new\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, false), res.Text)
				assert.Equal(t, toolfs.WriteValue{
					Path: dp, Operation: "update", Before: wrStr("old\n"), After: "new\n",
					Diff: "--- a" + dp + "\n+++ b" + dp + "\n@@ -1 +1 @@\n-old\n+new\n",
				}, res.Value)
				assert.Equal(t, []fs.WriteOptions{{Intent: fs.UnconditionalWrite()}}, x.e.fs.writeCalls())
				assert.Equal(t, "new\n", wrDisk(t, dp))
			},
		},
		{
			name:  "T-61 an identical-content overwrite is an update with an empty diff",
			files: []string{"a.txt: same\n"},
			prep:  func(t *testing.T, x *env) { x.e.mustRead(x.sess, "a.txt") },
			args:  map[string]any{"file_path": "a.txt", "content": "same\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, false), res.Text)
				assert.Equal(t, toolfs.WriteValue{Path: dp, Operation: "update", Before: wrStr("same\n"), After: "same\n", Diff: ""}, res.Value)
				assert.Equal(t, "same\n", wrDisk(t, dp))
			},
		},
		{
			name:  "T-61 an update diff has @@ hunks with 3 lines of context",
			bare:  true,
			files: []string{"a.txt: " + wrLines(10, nil)},
			args:  map[string]any{"file_path": "a.txt", "content": wrLines(10, map[int]string{5: "FIVE"})},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				v, ok := res.Value.(toolfs.WriteValue)
				require.True(t, ok)
				assert.Equal(t, "--- a"+dp+"\n+++ b"+dp+"\n@@ -2,7 +2,7 @@\n line2\n line3\n line4\n-line5\n+FIVE\n line6\n line7\n line8\n", v.Diff)
			},
		},
		{
			name:  "T-88 two distant changes make two hunks",
			bare:  true,
			files: []string{"a.txt: " + wrLines(20, nil)},
			args:  map[string]any{"file_path": "a.txt", "content": wrLines(20, map[int]string{2: "TWO", 18: "EIGHTEEN"})},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				v, ok := res.Value.(toolfs.WriteValue)
				require.True(t, ok)
				assert.Equal(t, "--- a"+dp+"\n+++ b"+dp+"\n"+
					"@@ -1,5 +1,5 @@\n line1\n-line2\n+TWO\n line3\n line4\n line5\n"+
					"@@ -15,6 +15,6 @@\n line15\n line16\n line17\n-line18\n+EIGHTEEN\n line19\n line20\n", v.Diff)
			},
		},
		{
			name: "section 1 an empty content is legal and creates an empty file",
			args: map[string]any{"file_path": "empty.txt", "content": ""},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "empty.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, true), res.Text)
				assert.Equal(t, toolfs.WriteValue{Path: dp, Operation: "create", After: ""}, res.Value)
				assert.Equal(t, "", wrDisk(t, dp))
			},
		},
		{
			name:  "Z-4 write puts CRLF content on disk as given; before and after are LF-normalized",
			bare:  true,
			files: []string{"a.txt: a\r\nb\r\nc\r\n"},
			args:  map[string]any{"file_path": "a.txt", "content": "a\r\nB\r\nc\r\n"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "a.txt")
				wrOK(t, res)
				v, ok := res.Value.(toolfs.WriteValue)
				require.True(t, ok)
				assert.Equal(t, wrStr("a\nb\nc\n"), v.Before)
				assert.Equal(t, "a\nB\nc\n", v.After)
				assert.Equal(t, "a\r\nB\r\nc\r\n", wrDisk(t, dp))
			},
		},
		{
			name: "L-81 missing parents of a new file are created",
			args: map[string]any{"file_path": "nested/deep/a.txt", "content": "x"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "nested", "deep", "a.txt")
				wrOK(t, res)
				assert.Equal(t, wrWriteText(dp, true), res.Text)
				assert.Equal(t, "x", wrDisk(t, dp))
			},
		},
		{
			name:  "L-62 writing onto a directory is FS_NOT_REGULAR_FILE with no remedy",
			bare:  true,
			files: []string{"dir/"},
			args:  map[string]any{"file_path": "dir", "content": "x"},
			check: func(t *testing.T, x *env, res tool.Result) {
				dp := filepath.Join(x.ws, "dir")
				wrFail(t, res, fs.CodeNotRegularFile, `Error: cannot write "`+dp+`": not a regular file`)
				assert.DirExists(t, dp)
			},
		},
	}
	wrRunCases(t, tests, "write")
}

// TestWriteEditSessionCwd covers T-12..T-17 for write and edit: relative
// paths resolve against the session's cwd (canonicalized when a ".."
// segment is involved; under a confining backend the policy's workspace
// root), never the backend's configured cwd, and no argument can choose it.
func TestWriteEditSessionCwd(t *testing.T) {
	type layout struct {
		base, backend, real, child, link, other string
	}
	mk := func(t *testing.T) layout {
		base := wrBase(t)
		l := layout{
			base:    base,
			backend: filepath.Join(base, "backend"),
			real:    filepath.Join(base, "real"),
			child:   filepath.Join(base, "real", "child"),
			link:    filepath.Join(base, "link"),
			other:   filepath.Join(base, "other"),
		}
		fixture.Build(t, base, "backend/", "real/child/", "other/", "link => real/child")
		return l
	}
	tests := []struct {
		name string
		run  func(t *testing.T, l layout)
	}{
		{
			name: "T-12 no agent: a relative write lands in the backend's cwd",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, true)
				res := e.write(nil, map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, wrWriteText(filepath.Join(l.backend, "a.txt"), true), res.Text)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.backend, "a.txt")))
			},
		},
		{
			name: "T-12 no agent: a relative edit resolves against the backend's cwd",
			run: func(t *testing.T, l layout) {
				wrPut(t, filepath.Join(l.backend, "e.txt"), "x")
				e := wrLocal(t, l.backend, true)
				res := e.edit(nil, map[string]any{"file_path": "e.txt", "old_string": "x", "new_string": "y"})
				wrOK(t, res)
				assert.Equal(t, wrEditText(filepath.Join(l.backend, "e.txt"), false), res.Text)
				assert.Equal(t, "y", wrDisk(t, filepath.Join(l.backend, "e.txt")))
			},
		},
		{
			name: "T-12 a session with no cwd resolves against the backend's cwd",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, false)
				res := e.write(session.New("s", ""), map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.backend, "a.txt")))
			},
		},
		{
			name: "T-13 a symlinked session cwd without .. is passed verbatim",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, false)
				res := e.write(session.New("s", l.link), map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, wrWriteText(filepath.Join(l.link, "a.txt"), true), res.Text, "the display path keeps the link spelling")
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.child, "a.txt")))
				assert.NoFileExists(t, filepath.Join(l.backend, "a.txt"))
			},
		},
		{
			name: "T-14 a .. segment in the path: the cwd is canonicalized first, so .. climbs from the physical directory",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, false)
				res := e.write(session.New("s", l.link), map[string]any{"file_path": "../parent.txt", "content": "p"})
				wrOK(t, res)
				assert.Equal(t, wrWriteText(filepath.Join(l.real, "parent.txt"), true), res.Text)
				assert.Equal(t, "p", wrDisk(t, filepath.Join(l.real, "parent.txt")))
				assert.NoFileExists(t, filepath.Join(l.base, "parent.txt"), "not the lexical parent of the link")
			},
		},
		{
			name: "T-14 a .. segment in the session cwd: canonicalized first",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, false)
				res := e.write(session.New("s", l.link+"/.."), map[string]any{"file_path": "x.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, wrWriteText(filepath.Join(l.real, "x.txt"), true), res.Text)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.real, "x.txt")))
				assert.NoFileExists(t, filepath.Join(l.base, "x.txt"))
			},
		},
		{
			name: "T-14 a name that merely contains .. is not a .. segment: the cwd stays verbatim",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, false)
				res := e.write(session.New("s", l.link), map[string]any{"file_path": "..foo/a..b.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, wrWriteText(filepath.Join(l.link, "..foo", "a..b.txt"), true), res.Text)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.child, "..foo", "a..b.txt")))
			},
		},
		{
			name: "T-14 an edit through ../ from a symlinked cwd edits the physical parent's file",
			run: func(t *testing.T, l layout) {
				wrPut(t, filepath.Join(l.real, "p.txt"), "old")
				wrPut(t, filepath.Join(l.base, "p.txt"), "old")
				e := wrLocal(t, l.backend, true)
				res := e.edit(session.New("s", l.link), map[string]any{"file_path": "../p.txt", "old_string": "old", "new_string": "new"})
				wrOK(t, res)
				assert.Equal(t, "new", wrDisk(t, filepath.Join(l.real, "p.txt")))
				assert.Equal(t, "old", wrDisk(t, filepath.Join(l.base, "p.txt")))
			},
		},
		{
			name: "T-16 policy deployment: a relative write lands in the session dir, not the backend's cwd",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, false)
				res := e.write(session.New("s", l.other), map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.other, "a.txt")))
				assert.NoFileExists(t, filepath.Join(l.backend, "a.txt"))
			},
		},
		{
			name: "T-16 bare deployment: a relative write lands in the session dir, not the backend's cwd",
			run: func(t *testing.T, l layout) {
				wrPut(t, filepath.Join(l.backend, "a.txt"), "backend")
				e := wrLocal(t, l.backend, true)
				res := e.write(session.New("s", l.other), map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, wrWriteText(filepath.Join(l.other, "a.txt"), true), res.Text)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.other, "a.txt")))
				assert.Equal(t, "backend", wrDisk(t, filepath.Join(l.backend, "a.txt")))
			},
		},
		{
			name: "T-17 read then edit with the same session resolve against the session cwd end to end",
			run: func(t *testing.T, l layout) {
				wrPut(t, filepath.Join(l.other, "a.txt"), "hello world\n")
				wrPut(t, filepath.Join(l.backend, "a.txt"), "hello world\n")
				e := wrLocal(t, l.backend, false)
				sess := session.New("s", l.other)
				e.mustRead(sess, "a.txt")
				res := e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "world", "new_string": "there"})
				wrOK(t, res)
				assert.Equal(t, wrEditText(filepath.Join(l.other, "a.txt"), false), res.Text)
				assert.Equal(t, "hello there\n", wrDisk(t, filepath.Join(l.other, "a.txt")))
				assert.Equal(t, "hello world\n", wrDisk(t, filepath.Join(l.backend, "a.txt")))
			},
		},
		{
			name: "T-12..T-17 no argument chooses the cwd: write refuses cwd and workspace_root (issue 21) and writes nothing",
			run: func(t *testing.T, l layout) {
				e := wrLocal(t, l.backend, false)
				res := e.write(session.New("s", l.other), map[string]any{
					"file_path": "a.txt", "content": "x", "cwd": l.backend, "workspace_root": l.backend,
				})
				wrFail(t, res, errcode.InvalidArgument, `Error: unknown argument "cwd"; unknown argument "workspace_root"; nothing was done; this tool takes: file_path, content, dry_run`)
				assert.NoFileExists(t, filepath.Join(l.other, "a.txt"))
				assert.NoFileExists(t, filepath.Join(l.backend, "a.txt"))
			},
		},
		{
			name: "T-12..T-17 no argument chooses the cwd: edit refuses cwd and workspace_root (issue 21) and edits nothing",
			run: func(t *testing.T, l layout) {
				wrPut(t, filepath.Join(l.other, "a.txt"), "one")
				wrPut(t, filepath.Join(l.backend, "a.txt"), "one")
				e := wrLocal(t, l.backend, true)
				res := e.edit(session.New("s", l.other), map[string]any{
					"file_path": "a.txt", "old_string": "one", "new_string": "two", "cwd": l.backend, "workspace_root": l.backend,
				})
				wrFail(t, res, errcode.InvalidArgument, `Error: unknown argument "cwd"; unknown argument "workspace_root"; nothing was done; this tool takes: file_path, old_string, new_string, replace_all, edits, dry_run`)
				assert.Equal(t, "one", wrDisk(t, filepath.Join(l.other, "a.txt")))
				assert.Equal(t, "one", wrDisk(t, filepath.Join(l.backend, "a.txt")))
			},
		},
		{
			name: "T-15 under fssandbox the policy's canonical workspace root is the cwd, not the session's link spelling",
			run: func(t *testing.T, l layout) {
				e := wrNew(t, wrSetup{Cwd: l.backend, Sandbox: wrSandboxCfg("danger-full-access", l.other)})
				res := e.write(session.New("s", l.link), map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, wrWriteText(filepath.Join(l.child, "a.txt"), true), res.Text)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.child, "a.txt")))
				assert.NoFileExists(t, filepath.Join(l.backend, "a.txt"))
				assert.NoFileExists(t, filepath.Join(l.other, "a.txt"))
			},
		},
		{
			name: "T-15 under fssandbox workspace-write, a relative write lands in the session workspace, which is writable",
			run: func(t *testing.T, l layout) {
				e := wrNew(t, wrSetup{Cwd: l.backend, Sandbox: wrSandboxCfg("workspace-write", l.other)})
				res := e.write(session.New("s", l.child), map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.child, "a.txt")))
			},
		},
		{
			name: "T-15 [src] under fssandbox with no agent, the policy's fallback root is the cwd",
			run: func(t *testing.T, l layout) {
				e := wrNew(t, wrSetup{Cwd: l.backend, Sandbox: wrSandboxCfg("danger-full-access", l.other), Bare: true})
				res := e.write(nil, map[string]any{"file_path": "a.txt", "content": "x"})
				wrOK(t, res)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(l.other, "a.txt")))
				assert.NoFileExists(t, filepath.Join(l.backend, "a.txt"))
			},
		},
		{
			name: "T-15 under fssandbox an extra workspace_root argument is refused: it neither moves the cwd nor widens the fence",
			run: func(t *testing.T, l layout) {
				e := wrNew(t, wrSetup{Cwd: l.backend, Sandbox: wrSandboxCfg("workspace-write", l.other)})
				sess := session.New("s", l.other)
				res := e.write(sess, map[string]any{"file_path": "a.txt", "content": "x", "workspace_root": l.backend, "cwd": l.backend})
				assert.EqualValues(t, errcode.InvalidArgument, res.Code, res.Text)
				assert.NoFileExists(t, filepath.Join(l.other, "a.txt"))
				assert.NoFileExists(t, filepath.Join(l.backend, "a.txt"))
				outside := filepath.Join(l.backend, "b.txt")
				res = e.write(sess, map[string]any{"file_path": outside, "content": "x"})
				wrFail(t, res, fs.CodeSandboxDenied, wrDenial("workspace-write"))
				assert.NoFileExists(t, outside)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := mk(t)
			tc.run(t, l)
			assert.Empty(t, fixture.Residue(t, l.base))
		})
	}
}

// TestWriteEditCancelled: a cancelled context (the Go form of an aborted
// signal) is FS_ABORTED, creates nothing and changes nothing (T-80's disk
// half).
func TestWriteEditCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		tool func(e *wrEnv) *tool.Tool
		args map[string]any
	}{
		{name: "write of a new file", tool: func(e *wrEnv) *tool.Tool { return e.tools.Write() }, args: map[string]any{"file_path": "new.txt", "content": "x"}},
		{name: "write over an existing file", tool: func(e *wrEnv) *tool.Tool { return e.tools.Write() }, args: map[string]any{"file_path": "a.txt", "content": "x"}},
		{name: "edit of an existing file", tool: func(e *wrEnv) *tool.Tool { return e.tools.Edit() }, args: map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"}},
	}
	for _, tc := range tests {
		t.Run("T-80 "+tc.name, func(t *testing.T) {
			ws := wrBase(t)
			fixture.Build(t, ws, "a.txt: hello")
			e := wrLocal(t, ws, true)
			before := fixture.Snapshot(t, ws)
			raw, err := json.Marshal(tc.args)
			require.NoError(t, err)
			res := tc.tool(e).Handler(session.NewContext(ctx, session.New("s1", ws)), tool.Call{Arguments: raw})
			assert.True(t, res.IsError)
			assert.EqualValues(t, fs.CodeAborted, res.Code, res.Text)
			assert.Equal(t, before, fixture.Snapshot(t, ws))
		})
	}
}

func TestWriteContentLimit(t *testing.T) {
	dir := t.TempDir()
	local, err := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	require.NoError(t, err)
	tools, err := toolfs.New(toolfs.Config{WriteMaxBytes: 8}, toolfs.Deps{FS: local})
	require.NoError(t, err)
	sess := session.New("s", dir)
	call := func(tl *tool.Tool, args string) tool.Result {
		return tl.Handler(session.NewContext(context.Background(), sess), tool.Call{Arguments: json.RawMessage(args)})
	}
	res := call(tools.Write(), `{"file_path":"a.txt","content":"123456789"}`)
	assert.True(t, res.IsError)
	assert.EqualValues(t, "FS_TOO_LARGE", res.Code)
	assert.Equal(t, "Error: content of 9 bytes exceeds the 8-byte limit", res.Text)
	assert.NoFileExists(t, filepath.Join(dir, "a.txt"), "nothing is written")
	res = call(tools.Write(), `{"file_path":"a.txt","content":"12345678"}`)
	require.False(t, res.IsError, res.Text)
	res = call(tools.Edit(), `{"file_path":"a.txt","old_string":"1","new_string":"abcdefghi"}`)
	assert.EqualValues(t, "FS_TOO_LARGE", res.Code)
	b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "12345678", string(b))
}

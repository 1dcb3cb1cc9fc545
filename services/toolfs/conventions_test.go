//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// bareTools returns the tools over a bare local backend whose sessions work
// in a fresh directory, that directory, and a caller of one tool.
func bareTools(t *testing.T) (*toolfs.Tools, string, func(*tool.Tool, map[string]any) tool.Result) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	local, err := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	require.NoError(t, err)
	tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: local})
	require.NoError(t, err)
	sess := session.New("s", dir)
	call := func(tl *tool.Tool, args map[string]any) tool.Result {
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		return tl.Handler(session.NewContext(context.Background(), sess), tool.Call{Arguments: raw})
	}
	return tools, dir, call
}

func diskOf(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestWriteEditConventionNotes: the result says in one line when the file's
// bytes changed beyond its text, and says nothing when its conventions
// survived (decision 10).
func TestWriteEditConventionNotes(t *testing.T) {
	tools, dir, call := bareTools(t)
	fixture.Build(t, dir, "crlf.txt: a\r\nb\r\n", "lf.txt: a\nb\n", "plain.txt: x\n")

	res := call(tools.Write(), map[string]any{"file_path": "crlf.txt", "content": "a\nb\n"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "a\r\nb\r\n", diskOf(t, filepath.Join(dir, "crlf.txt")), "issue 13: CRLF survives an LF write")
	assert.NotContains(t, res.Text, "\n</content>\n", "no note")
	v := res.Value.(toolfs.WriteValue)
	assert.Empty(t, v.Diff)
	assert.Empty(t, v.Note)

	res = call(tools.Write(), map[string]any{"file_path": "lf.txt", "content": "a\r\nb\r\n"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "a\r\nb\r\n", diskOf(t, filepath.Join(dir, "lf.txt")))
	note := "Line endings converted from LF to CRLF as the content gives them."
	assert.Equal(t, "<path>"+filepath.Join(dir, "lf.txt")+"</path>\n<type>file</type>\n<content>\nUpdated file\n"+note+"\n</content>", res.Text)
	assert.Equal(t, note, res.Value.(toolfs.WriteValue).Note)

	res = call(tools.Edit(), map[string]any{"file_path": "plain.txt", "old_string": "x", "new_string": "\ufeffx"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "\ufeffx\n", diskOf(t, filepath.Join(dir, "plain.txt")))
	assert.Equal(t, "The file "+filepath.Join(dir, "plain.txt")+" has been updated successfully.\nByte-order mark added.", res.Text)
}

func TestEditMissHint(t *testing.T) {
	tools, dir, call := bareTools(t)
	fixture.Build(t, dir, "menu.txt: cafe\u0301 menu\n")
	res := call(tools.Edit(), map[string]any{"file_path": "menu.txt", "old_string": "café menu", "new_string": "tea menu"})
	assert.True(t, res.IsError)
	assert.EqualValues(t, "FS_EDIT_NOT_FOUND", res.Code)
	assert.Contains(t, res.Text, "line 1 matches only under Unicode normalization (NFC)")
	assert.Equal(t, "cafe\u0301 menu\n", diskOf(t, filepath.Join(dir, "menu.txt")), "no fuzzy application")
}

func TestReadWriteUTF16(t *testing.T) {
	tools, dir, call := bareTools(t)
	// "hi\r\nthere\r\n" in UTF-16LE with its byte-order mark.
	le := "\xff\xfeh\x00i\x00\r\x00\n\x00t\x00h\x00e\x00r\x00e\x00\r\x00\n\x00"
	fixture.Build(t, dir, "u.txt: "+le)
	res := call(tools.Read(), map[string]any{"file_path": "u.txt"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, []toolfs.Line{{Number: 1, Text: "hi"}, {Number: 2, Text: "there"}}, res.Value.(toolfs.ReadValue).Lines)

	res = call(tools.Edit(), map[string]any{"file_path": "u.txt", "old_string": "there", "new_string": "yo"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "\xff\xfeh\x00i\x00\r\x00\n\x00y\x00o\x00\r\x00\n\x00", diskOf(t, filepath.Join(dir, "u.txt")))

	res = call(tools.Write(), map[string]any{"file_path": "u.txt", "content": "ok\n"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "\xff\xfeo\x00k\x00\r\x00\n\x00", diskOf(t, filepath.Join(dir, "u.txt")))
}

// TestHomeExpansion: "~" and "~/..." name the process user's home (an
// injected HOME here); "~user" and a "~" without HOME are refused, and no
// literal "~" entry ever appears in the working directory (decision 13).
func TestHomeExpansion(t *testing.T) {
	tools, dir, call := bareTools(t)
	home := t.TempDir()
	t.Setenv("HOME", home)

	res := call(tools.Write(), map[string]any{"file_path": "~/.config/app/settings.json", "content": "{}\n"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "{}\n", diskOf(t, filepath.Join(home, ".config/app/settings.json")))

	require.NoError(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte("export A=1\n"), 0o644))
	res = call(tools.Read(), map[string]any{"file_path": "~/.bashrc"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, []toolfs.Line{{Number: 1, Text: "export A=1"}}, res.Value.(toolfs.ReadValue).Lines)

	res = call(tools.List(), map[string]any{"path": "~"})
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, ".bashrc")

	res = call(tools.Write(), map[string]any{"file_path": "~root/x", "content": "no"})
	assert.True(t, res.IsError)
	assert.EqualValues(t, errcode.InvalidArgument, res.Code)
	assert.Equal(t, `Error: file_path "~root/x" names the home directory of user "root", which is not expanded; give an absolute path, or ./~root/x for a file of that name in the working directory`, res.Text)

	t.Setenv("HOME", "")
	res = call(tools.Write(), map[string]any{"file_path": "~/x", "content": "no"})
	assert.True(t, res.IsError)
	assert.EqualValues(t, errcode.InvalidArgument, res.Code)
	assert.Contains(t, res.Text, "HOME is not set")

	res = call(tools.Write(), map[string]any{"file_path": "./~root/x", "content": "yes"})
	require.False(t, res.IsError, res.Text)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the explicit ./~root entry")
	assert.Equal(t, "~root", entries[0].Name())
	assert.NoDirExists(t, filepath.Join(dir, "~"))
}

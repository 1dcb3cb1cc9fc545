//go:build linux

package toolfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// manageCase is one call of mkdir, delete or move on a fresh workspace.
type manageCase struct {
	name  string
	files []string
	tool  string
	args  map[string]any
	// code, when set, is the failure expected; the disk must not change.
	code errcode.Code
	text string // expected text ("<ws>" expands to the workspace)
	// exists and absent are workspace paths checked after a success.
	exists, absent []string
	disk           map[string]string // workspace path -> content after
}

func TestManageTools(t *testing.T) {
	cases := []manageCase{
		{
			name: "mkdir makes missing parents by default", tool: "mkdir", args: map[string]any{"path": "a/b"},
			text: "Created directory <ws>/a/b (2 directories created)", exists: []string{"a/b"},
		},
		{
			name: "mkdir of an existing directory says so", files: []string{"d/"}, tool: "mkdir", args: map[string]any{"path": "d"},
			text: "Directory <ws>/d already exists",
		},
		{
			name: "mkdir without parents needs the parent", tool: "mkdir", args: map[string]any{"path": "a/b", "parents": false},
			code: fs.CodeNotFound,
		},
		{
			name: "mkdir over a file already exists", files: []string{"f: x"}, tool: "mkdir", args: map[string]any{"path": "f"},
			code: fs.CodeAlreadyExists,
		},
		{name: "mkdir needs a path", tool: "mkdir", args: map[string]any{}, code: errcode.InvalidArgument},

		{
			name: "delete removes a file", files: []string{"f: x"}, tool: "delete", args: map[string]any{"path": "f"},
			text: "Deleted file <ws>/f", absent: []string{"f"},
		},
		{
			name: "delete removes a symlink, not its destination", files: []string{"t: T", "l => t"}, tool: "delete", args: map[string]any{"path": "l"},
			text: "Deleted symlink <ws>/l", absent: []string{"l"}, disk: map[string]string{"t": "T"},
		},
		{
			name: "delete of a non-empty directory needs recursive", files: []string{"d/f: x"}, tool: "delete", args: map[string]any{"path": "d"},
			code: fs.CodeNotEmpty,
		},
		{
			name: "delete recursive counts what it removed", files: []string{"d/f: x", "d/e/g: y", "d/l => f"}, tool: "delete", args: map[string]any{"path": "d", "recursive": true},
			text: "Deleted directory <ws>/d (2 files, 2 directories, 1 others)", absent: []string{"d"},
		},
		{
			name: "delete of the workspace root is refused", files: []string{"f: x"}, tool: "delete", args: map[string]any{"path": ".", "recursive": true},
			code: fs.CodePermissionDenied,
		},
		{name: "delete of a missing path is not found", tool: "delete", args: map[string]any{"path": "nope"}, code: fs.CodeNotFound},
		{
			name: "delete with a bad recursive is refused", files: []string{"f: x"}, tool: "delete", args: map[string]any{"path": "f", "recursive": "yes"},
			code: errcode.InvalidArgument,
		},

		{
			name: "move renames across directories", files: []string{"a: A", "d/"}, tool: "move", args: map[string]any{"source": "a", "destination": "d/b"},
			text: "Moved file <ws>/a to <ws>/d/b", absent: []string{"a"}, disk: map[string]string{"d/b": "A"},
		},
		{
			name: "move never replaces without overwrite", files: []string{"a: A", "b: B"}, tool: "move", args: map[string]any{"source": "a", "destination": "b"},
			code: fs.CodeAlreadyExists,
		},
		{
			name: "move with overwrite replaces", files: []string{"a: A", "b: B"}, tool: "move", args: map[string]any{"source": "a", "destination": "b", "overwrite": true},
			text: "Moved file <ws>/a to <ws>/b (replacing what was there)", absent: []string{"a"}, disk: map[string]string{"b": "A"},
		},
		{
			name: "move of a directory moves its contents", files: []string{"d/f: F"}, tool: "move", args: map[string]any{"source": "d", "destination": "e"},
			text: "Moved directory <ws>/d to <ws>/e", absent: []string{"d"}, disk: map[string]string{"e/f": "F"},
		},
		{
			name: "move of the workspace root is refused", files: []string{"f: x"}, tool: "move", args: map[string]any{"source": ".", "destination": "../elsewhere"},
			code: fs.CodePermissionDenied,
		},
		{name: "move needs a destination", files: []string{"a: A"}, tool: "move", args: map[string]any{"source": "a"}, code: errcode.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := wrBase(t)
			ws := filepath.Join(base, "ws")
			fixture.Build(t, ws, append([]string{"./"}, tc.files...)...)
			e := wrLocal(t, ws, false)
			before := fixture.Snapshot(t, base)
			tl := map[string]*tool.Tool{"mkdir": e.tools.Mkdir(), "delete": e.tools.Delete(), "move": e.tools.Move()}[tc.tool]
			res := wrCall(t, tl, session.New("s1", ws), tc.args)
			if tc.code != "" {
				require.True(t, res.IsError, res.Text)
				assert.EqualValues(t, tc.code, res.Code, res.Text)
				assert.Equal(t, before, fixture.Snapshot(t, base), "a failed %s changed the disk", tc.tool)
				return
			}
			require.False(t, res.IsError, res.Text)
			wrConforms(t, tl.OutputSchema, res.Value)
			assert.Equal(t, expandWS(tc.text, ws), res.Text)
			for _, p := range tc.exists {
				assert.DirExists(t, filepath.Join(ws, p))
			}
			for _, p := range tc.absent {
				_, err := os.Lstat(filepath.Join(ws, p))
				assert.True(t, os.IsNotExist(err), "%s must be gone", p)
			}
			for p, content := range tc.disk {
				assert.Equal(t, content, wrDisk(t, filepath.Join(ws, p)))
			}
		})
	}
}

func expandWS(s, ws string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if len(s)-i >= 4 && s[i:i+4] == "<ws>" {
			out = append(out, ws...)
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// TestMoveCarriesReadRecords checks that what a session read follows the
// file it moves: an edit of the destination needs no new read, the source is
// absent, and a file that changed since the read stays stale.
func TestMoveCarriesReadRecords(t *testing.T) {
	ws := wrBase(t)
	fixture.Build(t, ws, "a.txt: hello", "d/n.txt: inner", "c.txt: seen")
	e := wrLocal(t, ws, false)
	sess := session.New("s1", ws)
	e.mustRead(sess, "a.txt")
	e.mustRead(sess, "d/n.txt")
	e.mustRead(sess, "c.txt")

	res := e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"})
	wrOK(t, res)
	res = wrCall(t, e.tools.Move(), sess, map[string]any{"source": "a.txt", "destination": "b.txt"})
	wrOK(t, res)
	res = e.edit(sess, map[string]any{"file_path": "b.txt", "old_string": "bye", "new_string": "ciao"})
	wrOK(t, res)
	assert.Equal(t, "ciao", wrDisk(t, filepath.Join(ws, "b.txt")))

	res = wrCall(t, e.tools.Move(), sess, map[string]any{"source": "d", "destination": "e"})
	wrOK(t, res)
	res = e.edit(sess, map[string]any{"file_path": "e/n.txt", "old_string": "inner", "new_string": "moved"})
	wrOK(t, res)
	assert.Equal(t, "moved", wrDisk(t, filepath.Join(ws, "e/n.txt")))

	require.NoError(t, os.WriteFile(filepath.Join(ws, "c.txt"), []byte("changed"), 0o644))
	res = wrCall(t, e.tools.Move(), sess, map[string]any{"source": "c.txt", "destination": "c2.txt"})
	require.True(t, res.IsError, "a file changed since the read is not moved: %s", res.Text)
	assert.EqualValues(t, fs.CodeStaleVersion, res.Code)
	assert.Equal(t, "changed", wrDisk(t, filepath.Join(ws, "c.txt")))
}

// TestManageToolsFenced runs the tools under a confining backend: read-only
// denies with the marker; an escalation names both paths of a move.
func TestManageToolsFenced(t *testing.T) {
	base := wrBase(t)
	ws := wrMkdir(t, filepath.Join(base, "ws"))
	fixture.Build(t, ws, "a: A")
	approvals := &wrApprovals{}
	e := wrNew(t, wrSetup{Cwd: ws, Sandbox: wrSandboxCfg(sandbox.ReadOnly, ws), Approver: approvals.approver()})
	sess := session.New("s1", ws)
	for name, call := range map[string]map[string]any{
		"mkdir":  {"path": "d"},
		"delete": {"path": "a"},
		"move":   {"source": "a", "destination": "b"},
	} {
		tl := map[string]*tool.Tool{"mkdir": e.tools.Mkdir(), "delete": e.tools.Delete(), "move": e.tools.Move()}[name]
		assert.Contains(t, tl.InputSchema.Properties, "sandbox_permissions", "%s advertises escalation under a confining backend", name)
		res := wrCall(t, tl, sess, call)
		require.True(t, res.IsError, res.Text)
		assert.Equal(t, wrDenial(sandbox.ReadOnly), res.Text, name)
	}
	assert.Equal(t, "A", wrDisk(t, filepath.Join(ws, "a")))
	assert.NoDirExists(t, filepath.Join(ws, "d"))

	local := wrLocal(t, ws, false)
	assert.NotContains(t, local.tools.Move().InputSchema.Properties, "sandbox_permissions", "no escalation under a bare backend")
}

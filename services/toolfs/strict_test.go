//go:build linux

package toolfs_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// TestUnknownArgumentsChangeNothing (issue 21): a key a tool's schema does
// not declare is INVALID_ARGUMENT naming it (with the declared key meant,
// when one is close), and nothing on disk changes: a mistyped dry run never
// becomes a real change.
func TestUnknownArgumentsChangeNothing(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		name := "fslocal"
		if sandboxed {
			name = "fssandbox"
		}
		t.Run(name, func(t *testing.T) {
			base := wrBase(t)
			setup := wrSetup{Cwd: base, Bare: true}
			if sandboxed {
				setup.Sandbox = wrSandboxCfg("workspace-write", base)
			}
			e := wrNew(t, setup)
			sess := session.New("s", base)
			file := wrPut(t, filepath.Join(base, "a.txt"), "one\n")
			dir := wrMkdir(t, filepath.Join(base, "d"))
			wrPut(t, filepath.Join(dir, "f"), "kept")
			for _, tc := range []struct {
				tool *tool.Tool
				args map[string]any
				want string
			}{
				{e.tools.Write(), map[string]any{"file_path": "a.txt", "content": "two\n", "dryRun": true}, `unknown argument "dryRun" (did you mean "dry_run"?)`},
				{e.tools.Write(), map[string]any{"file_path": "new.txt", "content": "x", "dry-run": true}, `unknown argument "dry-run" (did you mean "dry_run"?)`},
				{e.tools.Edit(), map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two", "dryRun": true}, `unknown argument "dryRun" (did you mean "dry_run"?)`},
				{e.tools.Edit(), map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two", "replaceAll": true}, `unknown argument "replaceAll" (did you mean "replace_all"?)`},
				{e.tools.Delete(), map[string]any{"path": "d", "recursive": true, "dry_run": true}, `unknown argument "dry_run"`},
				{e.tools.Delete(), map[string]any{"path": "a.txt", "force": true}, `unknown argument "force"`},
				{e.tools.Move(), map[string]any{"source": "a.txt", "destination": "b.txt", "dryRun": true}, `unknown argument "dryRun"`},
				{e.tools.Mkdir(), map[string]any{"path": "m", "mode": "0777"}, `unknown argument "mode"`},
				{e.tools.Read(), map[string]any{"file_path": "a.txt", "limt": 1}, `unknown argument "limt" (did you mean "limit"?)`},
			} {
				res := wrCall(t, tc.tool, sess, tc.args)
				assert.True(t, res.IsError, "%s %v: %s", tc.tool.Name, tc.args, res.Text)
				assert.EqualValues(t, errcode.InvalidArgument, res.Code, res.Text)
				assert.Contains(t, res.Text, tc.want)
				assert.Contains(t, res.Text, "nothing was done")
			}
			assert.Equal(t, "one\n", wrDisk(t, file))
			assert.Equal(t, "kept", wrDisk(t, filepath.Join(dir, "f")))
			for _, absent := range []string{"new.txt", "b.txt", "m"} {
				_, err := os.Lstat(filepath.Join(base, absent))
				assert.True(t, os.IsNotExist(err), "%s was made", absent)
			}
			assert.Empty(t, e.fs.writeCalls(), "no write reached the backend")
			assert.Empty(t, e.fs.editCalls(), "no edit reached the backend")
		})
	}
}

// TestEveryWritableRootIsKept (issue 21): deleting or moving away a
// writable root itself (the workspace root, a temp root, a --writable-root)
// is refused the same way in every mode, and the root stays on disk with
// its contents.
func TestEveryWritableRootIsKept(t *testing.T) {
	for _, mode := range sandbox.Modes() {
		t.Run(string(mode), func(t *testing.T) {
			base := wrBase(t)
			ws := wrMkdir(t, filepath.Join(base, "ws"))
			temp := wrMkdir(t, filepath.Join(base, "temp"))
			cache := wrMkdir(t, filepath.Join(base, "cache"))
			for _, d := range []string{ws, temp, cache} {
				wrPut(t, filepath.Join(d, "keep"), "k")
			}
			e := wrNew(t, wrSetup{Cwd: ws, Bare: true, Sandbox: &sandboxpolicy.Config{
				Mode: mode, WorkspaceRoot: ws, TempRoots: []string{temp}, WritableRoots: []string{cache},
			}})
			sess := session.New("s", ws)
			for _, root := range []string{temp, cache} {
				res := wrCall(t, e.tools.Delete(), sess, map[string]any{"path": root, "recursive": true})
				wrFail(t, res, fs.CodePermissionDenied, "Error: cannot delete "+strconv.Quote(root)+": it is a writable root or the working directory")
				res = wrCall(t, e.tools.Move(), sess, map[string]any{"source": root, "destination": filepath.Join(ws, "moved")})
				wrFail(t, res, fs.CodePermissionDenied, "Error: cannot move "+strconv.Quote(root)+": it is a writable root or the working directory")
				assert.Equal(t, "k", wrDisk(t, filepath.Join(root, "keep")))
			}
			assert.NoDirExists(t, filepath.Join(ws, "moved"))
		})
	}
}

// TestSchemasDeclareTheirBounds (issue 21): every bound a tool enforces on
// an integer argument is declared in its schema, and every schema is
// closed.
func TestSchemasDeclareTheirBounds(t *testing.T) {
	e := wrNew(t, wrSetup{Cwd: wrBase(t), Bare: true, Config: toolfs.Config{ReadLimit: 7, ListLimit: 9}})
	assert.InDelta(t, 7, *e.tools.Read().InputSchema.Properties["limit"].Maximum, 0)
	assert.InDelta(t, 9, *e.tools.List().InputSchema.Properties["limit"].Maximum, 0)
	assert.InDelta(t, fs.MaxListDepth, *e.tools.List().InputSchema.Properties["depth"].Maximum, 0)
	for _, tl := range e.tools.All() {
		assert.Equal(t, &jsonschema.Schema{Not: &jsonschema.Schema{}}, tl.InputSchema.AdditionalProperties, tl.Name)
		for name, p := range tl.InputSchema.Properties {
			if p.Type == "integer" && name != "offset" {
				assert.NotNil(t, p.Maximum, "%s.%s declares no maximum", tl.Name, name)
			}
		}
	}
}

//go:build linux

package toolfs_test

// Attack round on issue 21 ("one policy, one guard"). Every test here that
// fails on the reviewed tree is a hole; see the report on branch attack.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// TestAttack21AncestorOfWritableRootIsKept: refuseRoot compares the
// target with each root for equality only, so deleting (or moving away) a
// directory that *contains* a writable root takes the root with it. With
// the workspace beneath a temp area (a workspace under /tmp with the
// default temp roots), workspace-write deletes the whole workspace and the
// session is left without one; under danger-full-access any root goes the
// same way. It failed before its fix.
func TestAttack21AncestorOfWritableRootIsKept(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		t.Run(string(mode), func(t *testing.T) {
			base := wrBase(t)
			temp := wrMkdir(t, filepath.Join(base, "temp"))
			ws := wrMkdir(t, filepath.Join(temp, "proj", "ws"))
			wrPut(t, filepath.Join(ws, "keep"), "k")
			cacheParent := wrMkdir(t, filepath.Join(base, "caches"))
			cache := wrMkdir(t, filepath.Join(cacheParent, "cache"))
			wrPut(t, filepath.Join(cache, "keep"), "k")
			e := wrNew(t, wrSetup{Cwd: ws, Bare: true, Sandbox: &sandboxpolicy.Config{
				Mode: mode, WorkspaceRoot: ws, TempRoots: []string{temp}, WritableRoots: []string{cache},
			}})
			sess := session.New("s", ws)
			res := wrCall(t, e.tools.Delete(), sess, map[string]any{"path": filepath.Join(temp, "proj"), "recursive": true})
			assert.True(t, res.IsError, "deleting the workspace's parent must be refused: %s", res.Text)
			assert.FileExists(t, filepath.Join(ws, "keep"), "the workspace root and its files are gone")
			if mode == sandbox.DangerFullAccess {
				res = wrCall(t, e.tools.Move(), sess, map[string]any{"source": cacheParent, "destination": filepath.Join(base, "elsewhere")})
				assert.True(t, res.IsError, "moving the --writable-root's parent away must be refused: %s", res.Text)
				assert.FileExists(t, filepath.Join(cache, "keep"), "the --writable-root was moved away")
			}
		})
	}
}

// TestAttack21DuplicateKeysAreRefused: the guard decodes arguments into a
// map, so a key given twice silently takes its last value:
// {"path":"d","recursive":false,"recursive":true} deletes the whole
// directory. Anything that reads the first occurrence (a proxy or an
// approval UI built on a first-match parser such as gjson) shows a
// different call from the one run. A strict decoder refuses duplicates
// (INVALID_ARGUMENT, nothing done), as it refuses unknown keys. failed before its fix.
func TestAttack21DuplicateKeysAreRefused(t *testing.T) {
	base := wrBase(t)
	e := wrNew(t, wrSetup{Cwd: base, Bare: true, Sandbox: wrSandboxCfg("workspace-write", base)})
	sess := session.New("s", base)
	dir := wrMkdir(t, filepath.Join(base, "d"))
	wrPut(t, filepath.Join(dir, "f"), "kept")
	for _, tc := range []struct {
		tl  *tool.Tool
		raw string
	}{
		{e.tools.Delete(), `{"path":"d","recursive":false,"recursive":true}`},
		{e.tools.Write(), `{"file_path":"new.txt","content":"x","dry_run":true,"dry_run":false}`},
		{e.tools.Write(), `{"file_path":"shown.txt","file_path":"other.txt","content":"x"}`},
	} {
		res := tc.tl.Handler(session.NewContext(context.Background(), sess), tool.Call{ID: "1", Arguments: json.RawMessage(tc.raw)})
		assert.True(t, res.IsError, "%s %s: %s", tc.tl.Name, tc.raw, res.Text)
		assert.EqualValues(t, errcode.InvalidArgument, res.Code, "%s %s: %s", tc.tl.Name, tc.raw, res.Text)
	}
	assert.FileExists(t, filepath.Join(dir, "f"), "recursive:false,recursive:true deleted the directory")
	assert.NoFileExists(t, filepath.Join(base, "new.txt"), "dry_run:true,dry_run:false wrote")
	assert.NoFileExists(t, filepath.Join(base, "other.txt"), "file_path given twice wrote the second")
}

// TestAttack21PromptSaysWhatTheDeleteDoes: the approval prompt of delete
// is the same whether recursive is false (only an empty directory goes) or
// true (the whole tree goes): "to delete the entry (a directory only with
// recursive)". The user approving danger-full-access for a path outside
// the roots cannot tell that this call erases everything beneath it; the
// same holds for move's overwrite and mkdir's parents. failed before its fix.
func TestAttack21PromptSaysWhatTheDeleteDoes(t *testing.T) {
	w := wrNewWorld(t)
	tree := wrMkdir(t, filepath.Join(w.outside, "tree"))
	wrPut(t, filepath.Join(tree, "f"), "kept")
	var prompts []string
	deny := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		prompts = append(prompts, sandboxpolicy.Prompt(req))
		return sandbox.Rejected, nil
	})
	e := w.sandboxed(t, wrWW, deny, true)
	sess := session.New("s", w.ws)
	for _, recursive := range []bool{false, true} {
		wrCall(t, e.tools.Delete(), sess, map[string]any{
			"path": tree, "recursive": recursive, "sandbox_permissions": "danger-full-access", "justification": "tidy up",
		})
	}
	if assert.Len(t, prompts, 2) {
		assert.NotEqual(t, prompts[0], prompts[1], "the prompt does not say whether the delete is recursive:\n%s", prompts[1])
	}
}

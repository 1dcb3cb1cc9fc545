//go:build linux

package toolfs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// TestCeiling_EndToEnd runs the write and edit tools over the confining
// backend for a session whose ceiling (an HTTP principal's widest mode,
// issue 26) is workspace-write: an escalation beyond it is refused without
// asking and changes nothing on disk; a deployment mode wider than it is
// clamped, so the fence itself refuses a plain write outside, and the
// denial offers no escalation; the workspace stays writable.
func TestCeiling_EndToEnd(t *testing.T) {
	const just = "The user asked for this file."
	const outsideBytes = "hello from outside\n"
	// The denial says no escalation is available: one would be refused.
	ceilingDenial := "Error: " + sandbox.DenialMarker(wrWW) + "\n" + sandbox.CeilingHint(wrWW)
	dangerEsc := map[string]any{"sandbox_permissions": "danger-full-access", "justification": just}
	cases := []struct {
		name     string
		server   sandbox.Mode
		edit     bool
		outside  bool
		esc      map[string]any
		wantCode fs.Code
		wantText string // "" for success
	}{
		{
			name: "a write outside asking for danger-full-access is refused without asking", server: wrWW, outside: true, esc: dangerEsc,
			wantCode: sandboxpolicy.CodeEscalationRefused,
			wantText: `Error: sandbox escalation to "danger-full-access" is refused without asking: the principal's widest mode is "workspace-write"`,
		},
		{
			name: "an edit outside asking for danger-full-access is refused without asking", server: wrWW, edit: true, outside: true, esc: dangerEsc,
			wantCode: sandboxpolicy.CodeEscalationRefused,
			wantText: `Error: sandbox escalation to "danger-full-access" is refused without asking: the principal's widest mode is "workspace-write"`,
		},
		{
			name: "a deployment of danger-full-access is clamped: a plain write outside is denied by the fence", server: wrDanger, outside: true,
			wantCode: fs.CodeSandboxDenied, wantText: ceilingDenial,
		},
		{
			name: "a deployment of danger-full-access is clamped: a plain edit outside is denied by the fence", server: wrDanger, edit: true, outside: true,
			wantCode: fs.CodeSandboxDenied, wantText: ceilingDenial,
		},
		{name: "a write in the workspace lands", server: wrDanger},
		{name: "an edit in the workspace lands", server: wrWW, edit: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := wrNewWorld(t)
			fixture.Build(t, w.base, "ws/e.txt: "+outsideBytes, "outside/e.txt: "+outsideBytes)
			asked := 0
			approver := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
				asked++
				t.Errorf("the approver was asked for %s beyond the session's ceiling", req.Mode)
				return sandbox.AllowedOnce, nil
			})
			e := w.sandboxed(t, tc.server, approver, false)
			sess := session.New("s1", w.ws)
			require.NoError(t, sandboxpolicy.SetCeiling(sess, wrWW))

			dir := w.ws
			if tc.outside {
				dir = w.outside
			}
			target := filepath.Join(dir, "e.txt")
			args := map[string]any{"file_path": target}
			e.mustRead(sess, target) // read before write: a refusal is the ceiling's
			if tc.edit {
				args["old_string"], args["new_string"] = "hello", "bye"
			} else {
				args["content"] = "overwritten"
			}
			for k, v := range tc.esc {
				args[k] = v
			}
			info, err := os.Stat(target)
			require.NoError(t, err)
			before := fixture.Snapshot(t, w.base)

			var res tool.Result
			if tc.edit {
				res = e.edit(sess, args)
			} else {
				res = e.write(sess, args)
			}
			assert.Zero(t, asked, "the approver is never asked beyond the ceiling")
			if tc.wantText == "" {
				wrOK(t, res)
				want := map[bool]string{true: "bye from outside\n", false: "overwritten"}[tc.edit]
				assert.Equal(t, want, wrDisk(t, target), "the workspace stays writable")
				return
			}
			wrFail(t, res, tc.wantCode, tc.wantText)
			if tc.esc != nil {
				assert.Empty(t, e.fs.writeCalls(), "a refused escalation never reaches the backend")
				assert.Empty(t, e.fs.editCalls(), "a refused escalation never reaches the backend")
			} else {
				// The fence refused it under the clamped mode.
				var stamp *sandbox.ExecutionPolicy
				if tc.edit {
					require.Len(t, e.fs.editCalls(), 1)
					stamp = e.fs.editCalls()[0].Policy
				} else {
					require.Len(t, e.fs.writeCalls(), 1)
					stamp = e.fs.writeCalls()[0].Policy
				}
				require.NotNil(t, stamp)
				assert.Equal(t, wrWW, stamp.Mode, "the deployment's danger-full-access clamped to the ceiling")
			}
			assert.Equal(t, before, fixture.Snapshot(t, w.base), "nothing changes on disk")
			assert.Equal(t, outsideBytes, wrDisk(t, target), "the outside file keeps its bytes")
			after, err := os.Stat(target)
			require.NoError(t, err)
			assert.Equal(t, info.Mode(), after.Mode(), "and its mode")
			assert.Equal(t, info.ModTime(), after.ModTime(), "and its modification time")
		})
	}
}

// TestBounds_EndToEnd: a session bounded to its workspace (an HTTP
// principal's, issue 26) whose client announces another directory as a
// root, or a root inside that is a symlink to it, still cannot write
// there: the write is denied and the file there keeps its bytes on disk;
// its own workspace stays writable.
func TestBounds_EndToEnd(t *testing.T) {
	const theirs = "the other principal's file\n"
	for _, tc := range []struct {
		name  string
		roots func(w wrWorld) []string
	}{
		{name: "the other workspace announced as a root", roots: func(w wrWorld) []string { return []string{w.outside} }},
		{name: "a root inside that is a symlink to the other workspace", roots: func(w wrWorld) []string { return []string{filepath.Join(w.ws, "link")} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := wrNewWorld(t)
			fixture.Build(t, w.base, "outside/e.txt: "+theirs, "ws/link => ../outside")
			e := w.sandboxed(t, wrWW, nil, false)
			sess := session.New("s1", w.ws)
			require.NoError(t, sandboxpolicy.SetCeiling(sess, wrWW))
			require.NoError(t, sandboxpolicy.SetBounds(sess, []string{w.ws}))
			require.NoError(t, sandboxpolicy.SetRoots(sess, tc.roots(w)))

			target := filepath.Join(w.outside, "e.txt")
			e.mustRead(sess, target)
			before := fixture.Snapshot(t, w.outside)
			res := e.write(sess, map[string]any{"file_path": target, "content": "mine now"})
			wrFail(t, res, fs.CodeSandboxDenied, "Error: "+sandbox.DenialMarker(wrWW)+"\n"+sandbox.CeilingHint(wrWW))
			assert.Equal(t, theirs, wrDisk(t, target))
			assert.Equal(t, before, fixture.Snapshot(t, w.outside), "nothing changes there")

			mine := filepath.Join(w.ws, "mine.txt")
			wrOK(t, e.write(sess, map[string]any{"file_path": mine, "content": "mine"}))
			assert.Equal(t, "mine", wrDisk(t, mine))
		})
	}
}

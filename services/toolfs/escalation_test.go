//go:build linux

package toolfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

const (
	wrRO     = sandbox.ReadOnly
	wrWW     = sandbox.WorkspaceWrite
	wrDanger = sandbox.DangerFullAccess
)

// wrWorld is a workspace and an outside directory beside it, under one
// canonical base. With no temp roots, ws is the only root workspace-write
// allows, so outside is outside every root although it lives under /tmp.
type wrWorld struct {
	base, ws, outside string
}

func wrNewWorld(t *testing.T) wrWorld {
	t.Helper()
	base := wrBase(t)
	w := wrWorld{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	wrMkdir(t, w.ws)
	wrMkdir(t, w.outside)
	return w
}

// sandboxed composes the tools over fssandbox with default mode, backend
// cwd ws, and readbeforewrite unless bare.
func (w wrWorld) sandboxed(t *testing.T, mode sandbox.Mode, approver sandbox.Approver, bare bool) *wrEnv {
	t.Helper()
	return wrNew(t, wrSetup{Cwd: w.ws, Sandbox: wrSandboxCfg(mode, w.ws), Approver: approver, Bare: bare})
}

// TestEscalationSchemas covers T-92 and the schemas of section 1: the
// escalation properties appear in the write and edit input schemas only
// under a confining backend.
func TestEscalationSchemas(t *testing.T) {
	w := wrNewWorld(t)
	local := wrLocal(t, w.ws, false)
	sandboxed := w.sandboxed(t, wrRO, nil, false)
	enum := []any{"workspace-write", "danger-full-access"}
	tests := []struct {
		name     string
		tool     *tool.Tool
		escalate bool
		required []string
		descs    map[string]string
	}{
		{
			name: "T-92 fslocal: write has no escalation properties", tool: local.tools.Write(),
			required: []string{"file_path", "content"},
			descs: map[string]string{
				"file_path": "Path to write, resolved by the filesystem backend.",
				"content":   "Full UTF-8 text content to write.",
			},
		},
		{
			name: "T-92 fslocal: edit has no escalation properties", tool: local.tools.Edit(),
			required: []string{"file_path"}, // old_string and new_string, or edits
			descs: map[string]string{
				"file_path":   "Path to edit, resolved by the filesystem backend.",
				"old_string":  "Literal text to replace. Must match exactly.",
				"new_string":  "Literal replacement text. Use an empty string to delete the match.",
				"replace_all": "Replace all matches. Defaults to false; when false, old_string must appear exactly once.",
			},
		},
		{
			name: "T-92 fssandbox: write has sandbox_permissions and justification", tool: sandboxed.tools.Write(), escalate: true,
			required: []string{"file_path", "content"},
			descs: map[string]string{
				"file_path": "Path to write, resolved by the filesystem backend.",
				"content":   "Full UTF-8 text content to write.",
			},
		},
		{
			name: "T-92 fssandbox: edit has sandbox_permissions and justification", tool: sandboxed.tools.Edit(), escalate: true,
			required: []string{"file_path"}, // old_string and new_string, or edits
			descs: map[string]string{
				"file_path":   "Path to edit, resolved by the filesystem backend.",
				"old_string":  "Literal text to replace. Must match exactly.",
				"new_string":  "Literal replacement text. Use an empty string to delete the match.",
				"replace_all": "Replace all matches. Defaults to false; when false, old_string must appear exactly once.",
			},
		},
		{
			name: "T-92 fssandbox: read has sandbox_permissions and justification (issue 24: one read of a path in the deny-read set)", tool: sandboxed.tools.Read(),
			escalate: true, required: []string{"file_path"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.tool.InputSchema
			require.NotNil(t, s)
			assert.Equal(t, "object", s.Type)
			assert.Equal(t, tc.required, s.Required)
			assert.Equal(t, &jsonschema.Schema{Not: &jsonschema.Schema{}}, s.AdditionalProperties, "issue 21: additionalProperties is false")
			for name, desc := range tc.descs {
				require.Contains(t, s.Properties, name)
				assert.Equal(t, desc, s.Properties[name].Description, name)
			}
			if !tc.escalate {
				assert.NotContains(t, s.Properties, "sandbox_permissions")
				assert.NotContains(t, s.Properties, "justification")
				return
			}
			require.Contains(t, s.Properties, "sandbox_permissions")
			require.Contains(t, s.Properties, "justification")
			perm := s.Properties["sandbox_permissions"]
			assert.Equal(t, "string", perm.Type)
			assert.Equal(t, enum, perm.Enum)
			assert.Equal(t, &jsonschema.Schema{Type: "string", Description: s.Properties["justification"].Description}, s.Properties["justification"])
			assert.NotEmpty(t, s.Properties["justification"].Description)
		})
	}
	t.Run("section 1 write and edit descriptions are exact", func(t *testing.T) {
		for _, e := range []*wrEnv{local, sandboxed} {
			assert.Equal(t, "Create or fully replace a UTF-8 text file.", e.tools.Write().Description)
			assert.Equal(t, "Edit an existing UTF-8 text file by replacing literal text.", e.tools.Edit().Description)
		}
	})
}

// TestEscalationComposition covers T-11: a confining backend needs the
// policy service.
func TestEscalationComposition(t *testing.T) {
	w := wrNewWorld(t)
	policy, err := sandboxpolicy.New(*wrSandboxCfg(wrWW, w.ws))
	require.NoError(t, err)
	sb, err := fssandbox.New(policy, fslocal.Config{Cwd: w.ws}, fssandbox.Config{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sb.Close()) })
	local, err := fslocal.New(fslocal.Config{Cwd: w.ws}, nil)
	require.NoError(t, err)

	tests := []struct {
		name    string
		deps    toolfs.Deps
		wantErr string
	}{
		{name: "T-11 a confining backend without a policy service fails", deps: toolfs.Deps{FS: sb}, wantErr: "the mounted filesystem confines"},
		{name: "T-11 a confining backend with a policy service builds", deps: toolfs.Deps{FS: sb, Policy: policy}},
		{name: "T-11 a bare backend needs no policy service", deps: toolfs.Deps{FS: local}},
		{name: "T-04 no filesystem fails", deps: toolfs.Deps{}, wantErr: "fs.Service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools, err := toolfs.New(toolfs.Config{}, tc.deps)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.NotNil(t, tools)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Nil(t, tools)
		})
	}
}

// TestEscalationStamp covers T-93: the policy stamped on the backend call
// of a plain write or edit.
func TestEscalationStamp(t *testing.T) {
	tests := []struct {
		name     string
		mode     sandbox.Mode
		override sandbox.Mode // "" for none
		cwd      func(w wrWorld) string
		noSess   bool
		edit     bool
		want     func(w wrWorld) sandbox.ExecutionPolicy
		landed   bool
	}{
		{
			name: "T-93 a plain write stamps the default mode and the canonical session cwd",
			mode: wrWW, cwd: func(w wrWorld) string { return filepath.Join(w.base, "wslink") },
			want: func(w wrWorld) sandbox.ExecutionPolicy {
				return sandbox.ExecutionPolicy{Mode: wrWW, WorkspaceRoot: w.ws, SessionID: "s1"}
			},
			landed: true,
		},
		{
			name: "T-93 a session cwd with .. is resolved for the stamp",
			mode: wrWW, cwd: func(w wrWorld) string { return w.ws + "/sub/.." },
			want: func(w wrWorld) sandbox.ExecutionPolicy {
				return sandbox.ExecutionPolicy{Mode: wrWW, WorkspaceRoot: w.ws, SessionID: "s1"}
			},
			landed: true,
		},
		{
			name: "T-93 a session override to read-only folds into the stamp (and the write is denied)",
			mode: wrWW, override: wrRO, cwd: func(w wrWorld) string { return w.ws },
			want: func(w wrWorld) sandbox.ExecutionPolicy {
				return sandbox.ExecutionPolicy{Mode: wrRO, WorkspaceRoot: w.ws, SessionID: "s1"}
			},
		},
		{
			name: "T-93 a session override to workspace-write over a read-only default folds in",
			mode: wrRO, override: wrWW, cwd: func(w wrWorld) string { return w.ws },
			want: func(w wrWorld) sandbox.ExecutionPolicy {
				return sandbox.ExecutionPolicy{Mode: wrWW, WorkspaceRoot: w.ws, SessionID: "s1"}
			},
			landed: true,
		},
		{
			name: "T-93 no agent: the deployment default, with no session id",
			mode: wrWW, noSess: true,
			want: func(w wrWorld) sandbox.ExecutionPolicy {
				return sandbox.ExecutionPolicy{Mode: wrWW, WorkspaceRoot: w.ws}
			},
			landed: true,
		},
		{
			name: "T-93 a plain edit stamps the policy too",
			mode: wrWW, cwd: func(w wrWorld) string { return filepath.Join(w.base, "wslink") }, edit: true,
			want: func(w wrWorld) sandbox.ExecutionPolicy {
				return sandbox.ExecutionPolicy{Mode: wrWW, WorkspaceRoot: w.ws, SessionID: "s1"}
			},
			landed: true,
		},
		{
			name: "T-93 a plain edit under a read-only override stamps read-only",
			mode: wrDanger, override: wrRO, cwd: func(w wrWorld) string { return w.ws }, edit: true,
			want: func(w wrWorld) sandbox.ExecutionPolicy {
				return sandbox.ExecutionPolicy{Mode: wrRO, WorkspaceRoot: w.ws, SessionID: "s1"}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := wrNewWorld(t)
			fixture.Build(t, w.base, "ws/sub/", "wslink => ws", "ws/e.txt: old")
			e := w.sandboxed(t, tc.mode, nil, true)
			var sess *session.Session
			if !tc.noSess {
				sess = session.New("s1", tc.cwd(w))
				if tc.override != "" {
					require.NoError(t, sandboxpolicy.SetMode(sess, tc.override))
				}
			}
			want := tc.want(w)
			if tc.edit {
				res := e.edit(sess, map[string]any{"file_path": "e.txt", "old_string": "old", "new_string": "new"})
				require.Len(t, e.fs.editCalls(), 1)
				assert.Equal(t, &want, e.fs.editCalls()[0].Policy)
				if tc.landed {
					wrOK(t, res)
					assert.Equal(t, "new", wrDisk(t, filepath.Join(w.ws, "e.txt")))
				} else {
					wrFail(t, res, fs.CodeSandboxDenied, wrDenial(want.Mode))
					assert.Equal(t, "old", wrDisk(t, filepath.Join(w.ws, "e.txt")))
				}
				return
			}
			res := e.write(sess, map[string]any{"file_path": "a.txt", "content": "x"})
			require.Len(t, e.fs.writeCalls(), 1)
			assert.Equal(t, &want, e.fs.writeCalls()[0].Policy)
			if tc.landed {
				wrOK(t, res)
				assert.Equal(t, "x", wrDisk(t, filepath.Join(w.ws, "a.txt")))
			} else {
				wrFail(t, res, fs.CodeSandboxDenied, wrDenial(want.Mode))
				assert.NoFileExists(t, filepath.Join(w.ws, "a.txt"))
			}
		})
	}
}

// TestEscalationDenial covers T-94: a sandbox denial is the marker of the
// stamped mode and the escalation hint, with FS_SANDBOX_DENIED; other
// provider errors pass through with no sandbox text.
func TestEscalationDenial(t *testing.T) {
	tests := []struct {
		name     string
		mode     sandbox.Mode
		override sandbox.Mode
		files    []string
		read     string // read this path first (relative to base)
		edit     bool
		path     func(w wrWorld) string
		args     map[string]any
		code     fs.Code
		text     func(w wrWorld) string
	}{
		{
			name: "T-94 read-only denies a write in the workspace",
			mode: wrRO, path: func(w wrWorld) string { return "a.txt" },
			code: fs.CodeSandboxDenied, text: func(wrWorld) string { return wrDenial(wrRO) },
		},
		{
			name: "T-94 the exact read-only denial text",
			mode: wrRO, path: func(w wrWorld) string { return "a.txt" },
			code: fs.CodeSandboxDenied,
			text: func(wrWorld) string {
				return "Error: [sandbox: file access denied under read-only mode]\n[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
			},
		},
		{
			name: "T-94 read-only denies an edit of a read file, which stays unchanged",
			mode: wrRO, files: []string{"ws/a.txt: hello"}, read: "ws/a.txt", edit: true,
			path: func(w wrWorld) string { return "a.txt" },
			code: fs.CodeSandboxDenied, text: func(wrWorld) string { return wrDenial(wrRO) },
		},
		{
			name: "T-94 workspace-write denies a write outside the workspace",
			mode: wrWW, path: func(w wrWorld) string { return filepath.Join(w.outside, "x.txt") },
			code: fs.CodeSandboxDenied, text: func(wrWorld) string { return wrDenial(wrWW) },
		},
		{
			name: "Z-5 workspace-write denies a write outside with missing parents and creates no directory",
			mode: wrWW, path: func(w wrWorld) string { return filepath.Join(w.outside, "new", "deep", "x.txt") },
			code: fs.CodeSandboxDenied, text: func(wrWorld) string { return wrDenial(wrWW) },
		},
		{
			name: "T-94 workspace-write denies a relative ../ escape",
			mode: wrWW, path: func(w wrWorld) string { return "../outside/x.txt" },
			code: fs.CodeSandboxDenied, text: func(wrWorld) string { return wrDenial(wrWW) },
		},
		{
			name: "T-94 workspace-write denies an edit of a read file outside",
			mode: wrWW, files: []string{"outside/o.txt: hello"}, read: "outside/o.txt", edit: true,
			path: func(w wrWorld) string { return filepath.Join(w.outside, "o.txt") },
			code: fs.CodeSandboxDenied, text: func(wrWorld) string { return wrDenial(wrWW) },
		},
		{
			name: "T-94 the marker names the stamped mode: a read-only session override under a workspace-write default",
			mode: wrWW, override: wrRO, path: func(w wrWorld) string { return "a.txt" },
			code: fs.CodeSandboxDenied, text: func(wrWorld) string { return wrDenial(wrRO) },
		},
		{
			name: "T-94 other provider errors pass through: a directory target",
			mode: wrWW, files: []string{"ws/dir/"}, path: func(w wrWorld) string { return "dir" },
			code: fs.CodeNotRegularFile,
			text: func(w wrWorld) string {
				return `Error: cannot write "` + filepath.Join(w.ws, "dir") + `": not a regular file`
			},
		},
		{
			name: "T-94 other provider errors pass through: an absent literal",
			mode: wrWW, files: []string{"ws/a.txt: hello"}, read: "ws/a.txt", edit: true,
			path: func(w wrWorld) string { return "a.txt" }, args: map[string]any{"old_string": "zzz"},
			code: fs.CodeEditNotFound,
			text: func(w wrWorld) string {
				return `Error: old_string was not found in "` + filepath.Join(w.ws, "a.txt") + `"`
			},
		},
		{
			name: "T-94 other provider errors pass through: an unread existing file keeps its read remedy",
			mode: wrWW, files: []string{"ws/a.txt: hello"}, path: func(w wrWorld) string { return "a.txt" },
			code: fs.CodeNotObserved,
			text: func(w wrWorld) string {
				return `Error: cannot overwrite existing "` + filepath.Join(w.ws, "a.txt") + `" without reading it first — read the file, then retry`
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := wrNewWorld(t)
			fixture.Build(t, w.base, tc.files...)
			e := w.sandboxed(t, tc.mode, nil, false)
			sess := session.New("s1", w.ws)
			if tc.override != "" {
				require.NoError(t, sandboxpolicy.SetMode(sess, tc.override))
			}
			if tc.read != "" {
				e.mustRead(sess, filepath.Join(w.base, tc.read))
			}
			before := fixture.Snapshot(t, w.base)
			args := map[string]any{"file_path": tc.path(w)}
			if tc.edit {
				args["old_string"], args["new_string"] = "hello", "bye"
			} else {
				args["content"] = "x"
			}
			for k, v := range tc.args {
				args[k] = v
			}
			var res tool.Result
			if tc.edit {
				res = e.edit(sess, args)
			} else {
				res = e.write(sess, args)
			}
			wrFail(t, res, tc.code, tc.text(w))
			if tc.code != fs.CodeSandboxDenied {
				assert.NotContains(t, res.Text, "[sandbox:")
			}
			assert.Equal(t, before, fixture.Snapshot(t, w.base), "a refused call changes nothing")
			assert.Empty(t, fixture.Residue(t, w.base))
		})
	}
}

// TestEscalationApproval covers T-95, T-96 and X-07..X-18 through the tools:
// the pairing check, the standing policy, the approval choreography, and
// that a refused escalation never reaches the backend.
func TestEscalationApproval(t *testing.T) {
	const just = "The user asked for this file."
	tests := []struct {
		name       string
		local      bool // fslocal instead of fssandbox
		mode       sandbox.Mode
		override   sandbox.Mode
		approver   *sandbox.Outcome // nil: no approver composed
		noSess     bool
		edit       bool
		outside    bool // target the outside dir instead of the workspace
		esc        map[string]any
		wantText   string // "" for success
		wantCode   fs.Code
		wantAsked  int
		wantCalled bool // the backend mutation was called
		wantStamp  sandbox.Mode
	}{
		{
			name: "T-95 allowed-once: a write outside lands under danger-full-access",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce), outside: true,
			esc:       map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantAsked: 1, wantCalled: true, wantStamp: wrDanger,
		},
		{
			name: "T-95 allowed-once: an edit outside lands under danger-full-access",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce), outside: true, edit: true,
			esc:       map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantAsked: 1, wantCalled: true, wantStamp: wrDanger,
		},
		{
			name: "T-95 allowed-once from read-only to workspace-write: a write in the workspace lands",
			mode: wrRO, approver: wrOutcome(sandbox.AllowedOnce),
			esc:       map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantAsked: 1, wantCalled: true, wantStamp: wrWW,
		},
		{
			name: "T-95 a granted workspace-write still does not reach outside: denied under the granted mode",
			mode: wrRO, approver: wrOutcome(sandbox.AllowedOnce), outside: true,
			esc:      map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantText: wrDenial(wrWW), wantCode: fs.CodeSandboxDenied, wantAsked: 1, wantCalled: true, wantStamp: wrWW,
		},
		{
			name: "T-95 rejected: exact text, the backend is never called",
			mode: wrWW, approver: wrOutcome(sandbox.Rejected), outside: true,
			esc:       map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantText:  `Error: the user rejected escalating this operation to "danger-full-access"`,
			wantAsked: 1,
		},
		{
			name: "T-95 rejected edit: exact text, the backend is never called",
			mode: wrRO, approver: wrOutcome(sandbox.Rejected), edit: true,
			esc:       map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantText:  `Error: the user rejected escalating this operation to "workspace-write"`,
			wantAsked: 1,
		},
		{
			name: "X-17 cancelled: exact text",
			mode: wrWW, approver: wrOutcome(sandbox.Cancelled), outside: true,
			esc:       map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantText:  `Error: approval for escalating to "danger-full-access" was cancelled`,
			wantAsked: 1,
		},
		{
			name: "X-17 unavailable: exact text",
			mode: wrWW, approver: wrOutcome(sandbox.Unavailable), outside: true,
			esc:       map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantText:  `Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel is available`,
			wantAsked: 1,
		},
		{
			name: "T-95 no approval service composed",
			mode: wrWW, outside: true,
			esc:      map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantText: `Error: sandbox escalation to "danger-full-access" requires approval, but no approval service is composed`,
		},
		{
			name: "T-95 an approver but no agent: never asked",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce), noSess: true, outside: true,
			esc:      map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantText: `Error: sandbox escalation to "danger-full-access" requires approval, but the call has no agent to route it through`,
		},
		{
			name: "T-95 only sandbox_permissions: a justification is required",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce), outside: true,
			esc:      map[string]any{"sandbox_permissions": "danger-full-access"},
			wantText: "Error: invalid escalation: sandbox_permissions requires a justification",
		},
		{
			name: "X-09 only justification is refused",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce), outside: true,
			esc:      map[string]any{"justification": just},
			wantText: "Error: invalid escalation: justification is only valid together with sandbox_permissions",
		},
		{
			name: "X-10 a whitespace-only justification is refused",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce), outside: true,
			esc:      map[string]any{"sandbox_permissions": "danger-full-access", "justification": "  \t "},
			wantText: "Error: invalid justification: expected a non-empty sentence",
		},
		{
			name: "issue 36: danger-full-access asked under danger-full-access is the mode held: allowed, the approver is never asked",
			mode: wrDanger, approver: wrOutcome(sandbox.AllowedOnce),
			esc:        map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantCalled: true, wantStamp: wrDanger,
		},
		{
			name: "issue 36: workspace-write asked under workspace-write is the mode held: allowed",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce),
			esc:        map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantCalled: true, wantStamp: wrWW,
		},
		{
			name: "issue 36: the mode held that the target needs beyond is still denied under it, nobody asked",
			mode: wrWW, approver: wrOutcome(sandbox.AllowedOnce), outside: true,
			esc:      map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantText: wrDenial(wrWW), wantCode: fs.CodeSandboxDenied, wantCalled: true, wantStamp: wrWW,
		},
		{
			name: "T-95 non-widening: workspace-write from danger-full-access is narrower",
			mode: wrDanger, approver: wrOutcome(sandbox.AllowedOnce),
			esc:      map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantText: `Error: sandbox escalation to "workspace-write" is not strictly wider than this call's current "danger-full-access" mode`,
		},
		{
			name: "issue 36: the mode held is judged against the session override: allowed",
			mode: wrRO, override: wrWW, approver: wrOutcome(sandbox.AllowedOnce),
			esc:        map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantCalled: true, wantStamp: wrWW,
		},
		{
			name:     "X-18 order: non-widening is reported before a missing approver",
			mode:     wrDanger,
			esc:      map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantText: `Error: sandbox escalation to "workspace-write" is not strictly wider than this call's current "danger-full-access" mode`,
		},
		{
			name: "X-06 read-only is never an escalation target; the approver is never asked",
			mode: wrRO, approver: wrOutcome(sandbox.AllowedOnce),
			esc:      map[string]any{"sandbox_permissions": "read-only", "justification": just},
			wantText: `Error: invalid escalation: sandbox_permissions must be one of workspace-write, danger-full-access, got "read-only"`,
		},
		{
			name:     "T-96 fslocal: both escalation fields on write are refused",
			local:    true,
			esc:      map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantText: "Error: sandbox_permissions is not available in this composition (no sandboxing filesystem to escalate)",
		},
		{
			name:  "T-96 fslocal: both escalation fields on edit are refused",
			local: true, edit: true,
			esc:      map[string]any{"sandbox_permissions": "danger-full-access", "justification": just},
			wantText: "Error: sandbox_permissions is not available in this composition (no sandboxing filesystem to escalate)",
		},
		{
			name:  "T-96 fslocal: an approver composed changes nothing",
			local: true, approver: wrOutcome(sandbox.AllowedOnce),
			esc:      map[string]any{"sandbox_permissions": "workspace-write", "justification": just},
			wantText: "Error: sandbox_permissions is not available in this composition (no sandboxing filesystem to escalate)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := wrNewWorld(t)
			fixture.Build(t, w.base, "ws/e.txt: hello", "outside/e.txt: hello")
			approvals := &wrApprovals{}
			setup := wrSetup{Cwd: w.ws}
			if tc.approver != nil {
				approvals.outcome = *tc.approver
				setup.Approver = approvals.approver()
			}
			if !tc.local {
				setup.Sandbox = wrSandboxCfg(tc.mode, w.ws)
			}
			e := wrNew(t, setup)
			var sess *session.Session
			if !tc.noSess {
				sess = session.New("s1", w.ws)
				if tc.override != "" {
					require.NoError(t, sandboxpolicy.SetMode(sess, tc.override))
				}
			}
			dir := w.ws
			if tc.outside {
				dir = w.outside
			}
			args := map[string]any{}
			var target string
			if tc.edit {
				target = filepath.Join(dir, "e.txt")
				if sess != nil {
					e.mustRead(sess, target)
				}
				args["file_path"], args["old_string"], args["new_string"] = target, "hello", "bye"
			} else {
				target = filepath.Join(dir, "new.txt")
				args["file_path"], args["content"] = target, "x"
			}
			for k, v := range tc.esc {
				args[k] = v
			}
			before := fixture.Snapshot(t, w.base)
			var res tool.Result
			var calls int
			var stamp *sandbox.ExecutionPolicy
			if tc.edit {
				res = e.edit(sess, args)
				calls = len(e.fs.editCalls())
				if calls > 0 {
					stamp = e.fs.editCalls()[0].Policy
				}
			} else {
				res = e.write(sess, args)
				calls = len(e.fs.writeCalls())
				if calls > 0 {
					stamp = e.fs.writeCalls()[0].Policy
				}
			}
			asked := approvals.asked()
			assert.Len(t, asked, tc.wantAsked, "approval requests")
			for _, req := range asked {
				assert.Equal(t, map[bool]string{true: "edit", false: "write"}[tc.edit], req.Tool)
				assert.Equal(t, sandbox.Mode(tc.esc["sandbox_permissions"].(string)), req.Mode)
				assert.Equal(t, just, req.Justification)
				assert.Equal(t, "escalate sandbox to "+tc.esc["sandbox_permissions"].(string)+": "+just, req.Reason)
			}
			if tc.wantCalled {
				assert.Equal(t, 1, calls)
				require.NotNil(t, stamp)
				assert.Equal(t, sandbox.ExecutionPolicy{Mode: tc.wantStamp, WorkspaceRoot: w.ws, SessionID: "s1"}, *stamp,
					"the granted mode, the root unchanged")
			} else {
				assert.Zero(t, calls, "a refused escalation never reaches the backend")
			}
			if tc.wantText != "" {
				wrFail(t, res, wrEscalationCode(tc.wantCode, tc.wantText), tc.wantText)
				assert.Equal(t, before, fixture.Snapshot(t, w.base), "nothing changes on disk")
				return
			}
			wrOK(t, res)
			if tc.edit {
				assert.Equal(t, "bye", wrDisk(t, target))
			} else {
				assert.Equal(t, "x", wrDisk(t, target))
			}
		})
	}
}

func wrOutcome(o sandbox.Outcome) *sandbox.Outcome { return &o }

// TestEscalationOnce covers T-95's "exactly one call": after a granted
// escalation, the next plain call is back to the standing mode.
func TestEscalationOnce(t *testing.T) {
	for _, edit := range []bool{false, true} {
		name := map[bool]string{false: "write", true: "edit"}[edit]
		t.Run("T-95 "+name+": a grant covers one call; the next plain call is denied again", func(t *testing.T) {
			w := wrNewWorld(t)
			fixture.Build(t, w.base, "outside/a.txt: hello", "outside/b.txt: hello")
			approvals := &wrApprovals{outcome: sandbox.AllowedOnce}
			e := w.sandboxed(t, wrWW, approvals.approver(), false)
			sess := session.New("s1", w.ws)
			first, second := filepath.Join(w.outside, "a.txt"), filepath.Join(w.outside, "b.txt")
			esc := map[string]any{"sandbox_permissions": "danger-full-access", "justification": "Needed outside."}
			call := func(p string, extra map[string]any) tool.Result {
				args := map[string]any{"file_path": p}
				if edit {
					e.mustRead(sess, p)
					args["old_string"], args["new_string"] = "hello", "bye"
				} else {
					args["content"] = "bye"
				}
				for k, v := range extra {
					args[k] = v
				}
				if edit {
					return e.edit(sess, args)
				}
				return e.write(sess, args)
			}
			if !edit {
				require.NoError(t, os.Remove(first))
				require.NoError(t, os.Remove(second))
			}
			wrOK(t, call(first, esc))
			assert.Equal(t, "bye", wrDisk(t, first))
			require.Len(t, approvals.asked(), 1)

			res := call(second, nil)
			wrFail(t, res, fs.CodeSandboxDenied, wrDenial(wrWW))
			if edit {
				assert.Equal(t, "hello", wrDisk(t, second))
			} else {
				assert.NoFileExists(t, second)
			}
			assert.Len(t, approvals.asked(), 1, "a plain call never asks")
			assert.Empty(t, fixture.Residue(t, w.base))
		})
	}
}

// TestEscalationApproverError: an approver that fails, or answers an
// unknown outcome, is a failure of the call, never an approval.
func TestEscalationApproverError(t *testing.T) {
	tests := []struct {
		name    string
		outcome sandbox.Outcome
		err     error
		text    string
	}{
		{name: "X-17 an approver error fails closed", outcome: sandbox.AllowedOnce, err: errors.New("channel broke"), text: "channel broke"},
		{name: "X-17 an unknown outcome fails closed", outcome: "maybe", text: `unknown approval outcome "maybe"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := wrNewWorld(t)
			approver := sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
				return tc.outcome, tc.err
			})
			e := w.sandboxed(t, wrWW, approver, false)
			target := filepath.Join(w.outside, "x.txt")
			res := e.write(session.New("s1", w.ws), map[string]any{
				"file_path": target, "content": "x", "sandbox_permissions": "danger-full-access", "justification": "Needed.",
			})
			assert.True(t, res.IsError)
			assert.Contains(t, res.Text, tc.text)
			assert.Empty(t, e.fs.writeCalls())
			assert.NoFileExists(t, target)
		})
	}
}

// TestEscalationArgumentOrder: argument validation precedes escalation, so
// an invalid call never asks the user.
func TestEscalationArgumentOrder(t *testing.T) {
	w := wrNewWorld(t)
	approvals := &wrApprovals{outcome: sandbox.AllowedOnce}
	e := w.sandboxed(t, wrRO, approvals.approver(), false)
	sess := session.New("s1", w.ws)
	esc := map[string]any{"sandbox_permissions": "workspace-write", "justification": "Needed."}
	tests := []struct {
		name string
		tool *tool.Tool
		args map[string]any
		text string
	}{
		{name: "write: a blank file_path is reported first", tool: e.tools.Write(), args: map[string]any{"file_path": " "}, text: "Error: file_path must be a non-empty string"},
		{name: "edit: an empty old_string is reported first", tool: e.tools.Edit(), args: map[string]any{"file_path": "a.txt", "old_string": "", "new_string": "x"}, text: "Error: old_string must be a non-empty string"},
		{name: "edit: equal strings are reported first", tool: e.tools.Edit(), args: map[string]any{"file_path": "a.txt", "old_string": "x", "new_string": "x"}, text: "Error: old_string and new_string must differ"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range esc {
				tc.args[k] = v
			}
			wrFail(t, wrCall(t, tc.tool, sess, tc.args), errcode.InvalidArgument, tc.text)
			assert.Empty(t, approvals.asked())
		})
	}
}

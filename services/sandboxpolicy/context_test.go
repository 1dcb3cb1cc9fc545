package sandboxpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

const (
	readOnlyContext = "Current DSH file policy: read-only. Any available operation enforced by the DSH file sandbox cannot modify files in the standing mode. Do not refuse a required modification from this policy alone: try an available tool normally and follow any denial and escalation guidance it returns."
	dangerContext   = "Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file modifications by available operations."
)

func workspaceWriteContext(quotedRoot string) string {
	return "Current DSH file policy: workspace-write. Any available operation enforced by the DSH file sandbox may modify files under the session workspace: " + quotedRoot + ". Some platform temporary areas may also be writable."
}

func TestPromptContextPlacement(t *testing.T) {
	t.Run("section 0 the prompt context is named sandbox:policy with order 110", func(t *testing.T) {
		assert.Equal(t, "sandbox:policy", sandboxpolicy.PromptContextName)
		assert.Equal(t, 110, sandboxpolicy.PromptContextOrder)
	})
}

func TestPromptContext(t *testing.T) {
	requireMissing(t, "/projects")
	dir := realTempDir(t)
	ws := mkdir(t, filepath.Join(dir, "ws"))

	tests := []struct {
		name string
		def  sandboxpolicy.Mode
		sess *session.Session
		want string
	}{
		{
			name: "P-11 read-only (exact)",
			def:  ro, sess: session.New("s", ws),
			want: readOnlyContext,
		},
		{
			name: "P-11 read-only from a session override (exact)",
			def:  danger, sess: session.New("s", ws, session.Event{Type: sandboxpolicy.EventMode, Data: sandboxpolicy.ModeEvent{Mode: ro}}),
			want: readOnlyContext,
		},
		{
			name: "P-12 workspace-write names the resolved session root JSON-quoted (exact)",
			def:  ww, sess: session.New("s", ws),
			want: workspaceWriteContext(`"` + ws + `"`),
		},
		{
			name: `P-12 a missing session cwd /projects/../projects/current is resolved lexically to "/projects/current" (exact)`,
			def:  ww, sess: session.New("s", "/projects/../projects/current"),
			want: workspaceWriteContext(`"/projects/current"`),
		},
		{
			name: `P-12 quotes and backslashes in the root are JSON-escaped (exact)`,
			def:  ww, sess: session.New("s", `/projects/say "hi"\now`),
			want: workspaceWriteContext(`"/projects/say \"hi\"\\now"`),
		},
		{
			name: `P-12 the root is quoted as JSON.stringify does: & < > are not \u-escaped (exact)`,
			def:  ww, sess: session.New("s", "/projects/R&D <main>"),
			want: workspaceWriteContext(`"/projects/R&D <main>"`),
		},
		{
			name: "P-13 danger-full-access (exact)",
			def:  danger, sess: session.New("s", ws),
			want: dangerContext,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := mustNew(t, sandboxpolicy.Config{Mode: tc.def, WorkspaceRoot: ws})
			assert.Equal(t, tc.want, sandboxpolicy.PromptContext(svc.Resolve(tc.sess, "")))
		})
	}

	t.Run("P-12 a call with no session names the fallback root", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{Mode: ww, WorkspaceRoot: "/projects/../projects/fallback"})
		assert.Equal(t, workspaceWriteContext(`"/projects/fallback"`), sandboxpolicy.PromptContext(svc.Resolve(nil, "")))
	})

	t.Run("P-16 no agent maps to a policy with no mode: the context is the empty string", func(t *testing.T) {
		assert.Empty(t, sandboxpolicy.PromptContext(sandboxpolicy.ExecutionPolicy{}))
		assert.Empty(t, sandboxpolicy.PromptContext(sandboxpolicy.ExecutionPolicy{WorkspaceRoot: ws}))
	})

	t.Run("P-16 a policy with an unknown mode gives the empty string", func(t *testing.T) {
		assert.Empty(t, sandboxpolicy.PromptContext(sandboxpolicy.ExecutionPolicy{Mode: "host-root", WorkspaceRoot: ws}))
	})
}

func TestPromptContextIgnoresTMPDIR(t *testing.T) {
	dir := realTempDir(t)
	tmpA := mkdir(t, filepath.Join(dir, "tmp-a"))
	tmpB := mkdir(t, filepath.Join(dir, "tmp-b"))
	// The workspace lives outside every temp area so that any temp path in
	// the text would be visible.
	requireMissing(t, "/projects")
	const ws = "/projects/current"

	for _, m := range sandboxpolicy.Modes() {
		t.Run("P-14 "+string(m)+" context is byte-identical when TMPDIR changes and never names a temp path", func(t *testing.T) {
			sess := session.New("s", ws)
			render := func(tmpdir string) (string, []string) {
				t.Setenv("TMPDIR", tmpdir)
				require.Equal(t, tmpdir, os.TempDir())
				svc := mustNew(t, sandboxpolicy.Config{Mode: m, WorkspaceRoot: ws})
				p := svc.Resolve(sess, "")
				return sandboxpolicy.PromptContext(p), svc.WritableRoots(sandboxpolicy.ExecutionPolicy{Mode: ww, WorkspaceRoot: ws})
			}
			a, rootsA := render(tmpA)
			b, rootsB := render(tmpB)
			require.Contains(t, rootsA, tmpA, "fixture precondition: TMPDIR reached the temp roots")
			require.Contains(t, rootsB, tmpB, "fixture precondition: TMPDIR reached the temp roots")
			assert.Equal(t, a, b)
			assert.NotEmpty(t, a)
			for _, s := range []string{tmpA, tmpB, dir, "/tmp", "tmp-a", "tmp-b"} {
				assert.NotContains(t, a, s)
			}
		})
	}
}

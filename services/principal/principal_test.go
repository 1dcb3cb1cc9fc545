package principal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/principal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

func TestNarrow(t *testing.T) {
	f := newFixture(t)
	alice2 := filepath.Join(f.dir, "srv", "alice2")
	deep := filepath.Join(f.alice, "src", "app")
	require.NoError(t, os.MkdirAll(alice2, 0o755))
	require.NoError(t, os.MkdirAll(deep, 0o755))
	// Loaded through the symlink: the workspace is the canonical directory,
	// so the canonical roots a client announces are compared with it.
	set, err := principal.Load(f.write(t, "principals:\n  alice:\n    workspaces: [$LINK, $BOB]\n", 0o600))
	require.NoError(t, err)
	alice, ok := set.Lookup("alice")
	require.True(t, ok)
	require.Equal(t, []string{f.alice, f.bob}, alice.Workspaces)

	cases := []struct {
		name  string
		roots []string
		want  []string
	}{
		{name: "no client roots: the workspaces", roots: nil, want: []string{f.alice, f.bob}},
		{name: "a root equal to a workspace", roots: []string{f.bob}, want: []string{f.bob}},
		{name: "a root beneath a workspace", roots: []string{deep}, want: []string{deep}},
		{name: "a sibling sharing the prefix is not inside", roots: []string{alice2}, want: []string{f.alice, f.bob}},
		{name: "the prefix trap is dropped, the root inside kept", roots: []string{alice2, deep}, want: []string{deep}},
		{name: "the workspaces' parent is not inside", roots: []string{filepath.Dir(f.alice)}, want: []string{f.alice, f.bob}},
		{name: "/ is not inside", roots: []string{"/"}, want: []string{f.alice, f.bob}},
		{name: "a relative root is not inside", roots: []string{"srv/alice"}, want: []string{f.alice, f.bob}},
		{name: "a root spelled with a trailing slash is cleaned", roots: []string{f.bob + "/"}, want: []string{f.bob}},
		{name: "the client's order kept, duplicates dropped", roots: []string{f.bob, deep, f.bob}, want: []string{f.bob, deep}},
		{name: "the canonical path of the symlinked workspace", roots: []string{sandboxpolicy.CanonicalPath(f.aliceLink)}, want: []string{f.alice}},
		{name: "the link's own spelling is not canonical and not inside", roots: []string{f.aliceLink}, want: []string{f.alice, f.bob}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := alice.Narrow(tc.roots)
			assert.Equal(t, tc.want, got)
			// The result is the caller's: changing it leaves the principal.
			if len(got) > 0 {
				got[0] = "/"
			}
			assert.Equal(t, []string{f.alice, f.bob}, alice.Workspaces)
		})
	}
}

func TestStandingModeAndWidest(t *testing.T) {
	ro, ww, dfa := sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess
	cases := []struct {
		name         string
		mode, widest sandbox.Mode
		server       sandbox.Mode
		standing     sandbox.Mode
		ceiling      sandbox.Mode
	}{
		{name: "mode set: it, whatever the server", mode: ro, widest: ww, server: dfa, standing: ro, ceiling: ww},
		{name: "mode only (widest defaults to it)", mode: ww, widest: ww, server: ro, standing: ww, ceiling: ww},
		{name: "widest only, server wider: clamped", widest: ww, server: dfa, standing: ww, ceiling: ww},
		{name: "widest only, server narrower: the server's", widest: dfa, server: ro, standing: ro, ceiling: dfa},
		{name: "widest read-only clamps workspace-write", widest: ro, server: ww, standing: ro, ceiling: ro},
		{name: "neither: both the server's", server: ww, standing: ww, ceiling: ww},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &principal.Principal{Name: "alice", Workspaces: []string{"/srv/alice"}, Mode: tc.mode, WidestMode: tc.widest}
			assert.Equal(t, tc.standing, p.StandingMode(tc.server))
			assert.Equal(t, tc.ceiling, p.Widest(tc.server))
		})
	}
}

// TestBind: a session bound to a principal resolves under its standing
// mode, within its ceiling, rooted in its workspaces and not in the
// server's working directory; its client's roots narrow them.
func TestBind(t *testing.T) {
	f := newFixture(t)
	deep := filepath.Join(f.alice, "src")
	require.NoError(t, os.Mkdir(deep, 0o755))
	serverCwd := filepath.Join(f.dir, "server-cwd")
	require.NoError(t, os.Mkdir(serverCwd, 0o755))
	set, err := principal.Load(f.write(t, `principals:
  alice:
    workspaces: [$ALICE, $BOB]
    widest-mode: workspace-write
  bob:
    workspaces: [$BOB]
    mode: read-only
`, 0o600))
	require.NoError(t, err)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.DangerFullAccess, WorkspaceRoot: serverCwd, TempRoots: []string{}})
	require.NoError(t, err)

	cases := []struct {
		name          string
		principal     string
		clientRoots   []string
		mode, ceiling sandbox.Mode
		root          string
		others        []string
	}{
		{
			name: "widest-mode clamps the server's danger-full-access", principal: "alice", mode: sandbox.WorkspaceWrite, ceiling: sandbox.WorkspaceWrite,
			root: f.alice, others: []string{f.bob},
		},
		{
			name: "the client's roots narrow the workspaces", principal: "alice", clientRoots: []string{deep, f.dir}, mode: sandbox.WorkspaceWrite, ceiling: sandbox.WorkspaceWrite,
			root: deep,
		},
		{name: "a mode only: it is the ceiling too", principal: "bob", mode: sandbox.ReadOnly, ceiling: sandbox.ReadOnly, root: f.bob},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := set.Lookup(tc.principal)
			require.True(t, ok)
			s := session.New("s-"+tc.principal, serverCwd)
			require.NoError(t, p.Bind(s, sandbox.DangerFullAccess))
			if tc.clientRoots != nil {
				require.NoError(t, sandboxpolicy.SetRoots(s, p.Narrow(tc.clientRoots)))
			}
			got := pol.Resolve(s, sandbox.FileTools, "")
			assert.Equal(t, tc.mode, got.Mode)
			assert.Equal(t, tc.ceiling, got.Ceiling)
			assert.Equal(t, tc.root, got.WorkspaceRoot, "never the server's working directory")
			assert.Equal(t, tc.others, got.OtherRoots)
			assert.NotContains(t, got.Roots(), serverCwd)

			// An escalation to danger-full-access is refused without asking.
			_, err := sandboxpolicy.Escalate(t.Context(), sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
				t.Error("the approver was asked beyond the principal's widest mode")
				return sandbox.AllowedOnce, nil
			}), s, sandbox.ApprovalRequest{Family: sandbox.FileTools, Mode: sandbox.DangerFullAccess, Justification: "j"}, got.Mode)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `the principal's widest mode is "`+string(tc.ceiling)+`"`)
		})
	}
}

// TestBind_RootSwappedOut: a root Narrow kept, made a symlink into another
// principal's workspace before the session's next call, is dropped by the
// bounds Bind set: the session stays in its own workspaces.
func TestBind_RootSwappedOut(t *testing.T) {
	f := newFixture(t)
	set, err := principal.Load(f.write(t, "principals:\n  alice:\n    workspaces: [$ALICE]\n", 0o600))
	require.NoError(t, err)
	alice, _ := set.Lookup("alice")
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: f.dir, TempRoots: []string{}})
	require.NoError(t, err)
	s := session.New("s", f.dir)
	require.NoError(t, alice.Bind(s, sandbox.WorkspaceWrite))
	require.Error(t, alice.Bind(s, sandbox.WorkspaceWrite), "a session is bound once")

	sub := filepath.Join(f.alice, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.Equal(t, []string{sub}, alice.Narrow([]string{sub}))
	require.NoError(t, sandboxpolicy.SetRoots(s, alice.Narrow([]string{sub})))
	require.NoError(t, os.Remove(sub))
	require.NoError(t, os.Symlink(f.bob, sub))

	got := pol.Resolve(s, sandbox.FileTools, "")
	assert.Equal(t, f.alice, got.WorkspaceRoot)
	assert.Equal(t, []string{f.alice}, got.WritableRoots())
}

package sandboxpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestResolve_Bounds: a session with bounds (an HTTP principal's
// workspaces) keeps only the roots within them, after canonicalization,
// else takes the bounds; it never falls back to the server's directory.
func TestResolve_Bounds(t *testing.T) {
	base := realTempDir(t)
	alice := mkdir(t, filepath.Join(base, "srv", "alice"))
	alice2 := mkdir(t, filepath.Join(base, "srv", "alice2"))
	bob := mkdir(t, filepath.Join(base, "srv", "bob"))
	sub := mkdir(t, filepath.Join(alice, "sub"))
	serverCwd := mkdir(t, filepath.Join(base, "server"))
	toBob := symlink(t, bob, filepath.Join(alice, "to-bob"))
	svc := mustNew(t, sandboxpolicy.Config{Mode: ww, WorkspaceRoot: serverCwd, TempRoots: []string{}})

	cases := []struct {
		name      string
		cwd       string
		announced []string // nil: none
		root      string
		others    []string
	}{
		{name: "no roots, no cwd: the bounds, not the server's directory", root: alice, others: []string{bob}},
		{name: "a cwd outside: the bounds", cwd: serverCwd, root: alice, others: []string{bob}},
		{name: "a cwd inside: kept", cwd: sub, root: sub},
		{name: "an announced root inside: kept", announced: []string{sub}, root: sub},
		{name: "the prefix trap is outside", announced: []string{alice2}, root: alice, others: []string{bob}},
		{name: "a root inside one bound that resolves into another bound is kept", announced: []string{toBob}, root: bob},
		{name: "outside roots dropped, inside kept in order", announced: []string{serverCwd, bob, sub}, root: bob, others: []string{sub}},
		{name: "an empty announcement: the bounds", announced: []string{}, root: alice, others: []string{bob}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := session.New("s", tc.cwd)
			require.NoError(t, sandboxpolicy.SetBounds(s, []string{alice, bob}))
			if tc.announced != nil {
				require.NoError(t, sandboxpolicy.SetRoots(s, tc.announced))
			}
			p := svc.Resolve(s, sandbox.FileTools, "")
			assert.Equal(t, tc.root, p.WorkspaceRoot)
			assert.Equal(t, tc.others, p.OtherRoots)
			assert.NotContains(t, p.WritableRoots(), serverCwd)
		})
	}

	t.Run("a root announced inside that resolves outside at its first resolution is dropped", func(t *testing.T) {
		s := session.New("s", "")
		require.NoError(t, sandboxpolicy.SetBounds(s, []string{alice}))
		swapped := filepath.Join(alice, "swapped")
		mkdir(t, swapped)
		require.NoError(t, sandboxpolicy.SetRoots(s, []string{swapped}))
		// Before the session's next call, the directory becomes a symlink
		// into another principal's workspace.
		require.NoError(t, os.Remove(swapped))
		symlink(t, bob, swapped)
		p := svc.Resolve(s, sandbox.FileTools, "")
		assert.Equal(t, alice, p.WorkspaceRoot)
		assert.Empty(t, p.OtherRoots)
		assert.NotContains(t, p.WritableRoots(), bob)
	})

	refused := []struct {
		name string
		dirs []string
	}{
		{name: "none", dirs: nil},
		{name: "relative", dirs: []string{"srv/alice"}},
		{name: "not clean", dirs: []string{alice + "/"}},
		{name: "the root", dirs: []string{"/"}},
	}
	for _, tc := range refused {
		t.Run("refused, nothing recorded: "+tc.name, func(t *testing.T) {
			s := session.New("s", "")
			require.Error(t, sandboxpolicy.SetBounds(s, tc.dirs))
			assert.Empty(t, s.Events())
		})
	}
	t.Run("the first bounds hold: a second call is refused", func(t *testing.T) {
		s := session.New("s", "")
		require.NoError(t, sandboxpolicy.SetBounds(s, []string{alice}))
		require.Error(t, sandboxpolicy.SetBounds(s, []string{bob}))
		assert.Len(t, s.Events(), 1)
		require.NoError(t, sandboxpolicy.SetRoots(s, []string{bob}))
		assert.Equal(t, alice, svc.Resolve(s, sandbox.FileTools, "").WorkspaceRoot)
	})
	t.Run("a nil session", func(t *testing.T) {
		require.Error(t, sandboxpolicy.SetBounds(nil, []string{alice}))
	})
}

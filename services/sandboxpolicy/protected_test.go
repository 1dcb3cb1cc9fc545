package sandboxpolicy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// protectedTree is a workspace (ws) and an extra writable root (extra)
// holding every kind of repository the rule knows: a bare one, a linked
// worktree whose common directory has no HEAD, a gitdir in the other root
// named by a `.git` file and not shaped like a repository, a `.git` deep
// down, a --protect match, and plain files.
var protectedTree = []string{
	"ws/plain.txt: a\n", "ws/key.pem: k\n",
	"ws/proj.git/HEAD: ref: refs/heads/main\n", "ws/proj.git/objects/", "ws/proj.git/refs/", "ws/proj.git/config: c\n",
	"ws/common/objects/", "ws/common/refs/", "ws/common/config: c\n",
	"ws/common/worktrees/wt/HEAD: ref: refs/heads/wt\n", "ws/common/worktrees/wt/commondir: ../..\n",
	"ws/wt/.git: gitdir: ../common/worktrees/wt\n", "ws/wt/file.txt: a\n",
	"ws/bld/.git: gitdir: ../../extra/bld.git\n", "extra/bld.git/config: c\n",
	"ws/a/b/c/d/e/f/g/h/i/j/k/l/m/.git/config: c\n",
	"extra/plain.txt: a\n",
}

func protectedService(t *testing.T) (svc *sandboxpolicy.Service, ws, extra string) {
	t.Helper()
	base := realTempDir(t)
	fixture.Build(t, base, protectedTree...)
	ws, extra = filepath.Join(base, "ws"), filepath.Join(base, "extra")
	svc, err := sandboxpolicy.New(sandboxpolicy.Config{
		Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}, WritableRoots: []string{extra},
		Protect: []string{"*.pem"},
	})
	require.NoError(t, err)
	return svc, ws, extra
}

// TestProtectedAt: one rule decides every target, by name and pattern
// (existing or not) and by what exists (shape, named gitdirs across roots).
func TestProtectedAt(t *testing.T) {
	svc, ws, extra := protectedService(t)
	cases := []struct {
		name      string
		root, rel string
		rule      string // a substring of the rule; "" when not protected
	}{
		{name: "a plain file is not protected", root: ws, rel: "plain.txt"},
		{name: "the root is not protected", root: ws, rel: ""},
		{name: "a worktree's own file is not protected", root: ws, rel: "wt/file.txt"},
		{name: "a plain file in the extra root is not protected", root: extra, rel: "plain.txt"},
		{name: "a .git file is protected by name", root: ws, rel: "wt/.git", rule: ".git"},
		{name: "a missing .git is protected by name", root: ws, rel: "new/.git/config", rule: ".git"},
		{name: "a --protect match that does not exist yet", root: ws, rel: "later.pem", rule: "*.pem"},
		{name: "a bare repository's config", root: ws, rel: "proj.git/config", rule: "proj.git"},
		{name: "a new hook in a bare repository", root: ws, rel: "proj.git/hooks/post-checkout", rule: "proj.git"},
		{name: "a linked worktree's gitdir", root: ws, rel: "common/worktrees/wt/config.worktree", rule: "common"},
		{name: "a common directory without HEAD", root: ws, rel: "common/config", rule: "common"},
		{name: "a gitdir named from another root", root: extra, rel: "bld.git/HEAD", rule: "bld.git"},
		{name: "a .git at depth 14", root: ws, rel: "a/b/c/d/e/f/g/h/i/j/k/l/m/.git/config", rule: ".git"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rule, err := svc.ProtectedAt(context.Background(), svc.Default(), filepath.Join(c.root, c.rel))
			require.NoError(t, err)
			if c.rule == "" {
				assert.Empty(t, rule)
				return
			}
			assert.Contains(t, rule, c.rule)
		})
	}
}

// TestProtectedAtCreatedAfterStart: the rule is decided at each call, so
// what appears after the service started is protected from then on.
func TestProtectedAtCreatedAfterStart(t *testing.T) {
	svc, ws, extra := protectedService(t)
	target := filepath.Join(extra, "late.git/config")
	rule, err := svc.ProtectedAt(context.Background(), svc.Default(), target)
	require.NoError(t, err)
	require.Empty(t, rule)
	fixture.Build(t, filepath.Dir(ws), "ws/late/.git: gitdir: ../../extra/late.git\n", "extra/late.git/")
	rule, err = svc.ProtectedAt(context.Background(), svc.Default(), target)
	require.NoError(t, err)
	assert.Contains(t, rule, "late.git")
}

// TestProtectedEntriesAndBoundaryAgree: the runner's list and the fence's
// decision are the same rule: every listed entry is protected, and
// Boundary names it so an escalation is asked.
func TestProtectedEntriesAndBoundaryAgree(t *testing.T) {
	svc, ws, extra := protectedService(t)
	entries, err := svc.ProtectedEntries(context.Background(), []string{ws, extra}, os.Geteuid())
	require.NoError(t, err)
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	for _, want := range []string{
		filepath.Join(ws, "key.pem"), filepath.Join(ws, "proj.git"), filepath.Join(ws, "common"),
		filepath.Join(ws, "common/worktrees/wt"), filepath.Join(ws, "wt/.git"), filepath.Join(extra, "bld.git"),
	} {
		assert.Contains(t, paths, want)
	}
	pol := svc.Default()
	for _, e := range entries {
		rule, err := svc.ProtectedAt(context.Background(), pol, e.Path)
		require.NoError(t, err)
		assert.NotEmpty(t, rule, "%s is listed but not protected", e.Path)
		assert.True(t, strings.HasPrefix(svc.Boundary(pol, e.Path), sandboxpolicy.BoundaryProtected), e.Path)
	}
	assert.Empty(t, svc.Boundary(pol, filepath.Join(ws, "plain.txt")))
}

// TestProtectedAtOutsideWorkspaceWrite: only workspace-write has protected
// paths; a target beneath no writable root is Boundary's question.
func TestProtectedAtOutsideWorkspaceWrite(t *testing.T) {
	svc, ws, _ := protectedService(t)
	target := filepath.Join(ws, "proj.git", "config")
	for _, m := range []sandbox.Mode{sandbox.ReadOnly, sandbox.DangerFullAccess} {
		rule, err := svc.ProtectedAt(context.Background(), sandbox.ExecutionPolicy{Mode: m, WorkspaceRoot: ws}, target)
		require.NoError(t, err)
		assert.Empty(t, rule, m)
	}
	rule, err := svc.ProtectedAt(context.Background(), svc.Default(), "/elsewhere/.git/config")
	require.NoError(t, err)
	assert.Empty(t, rule)
}

// TestProtectedAtFailsClosed: a search that cannot finish is an error,
// never a "not protected".
func TestProtectedAtFailsClosed(t *testing.T) {
	svc, ws, _ := protectedService(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := svc.ProtectedAt(ctx, svc.Default(), filepath.Join(ws, "plain.txt"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not finish")
	assert.True(t, strings.HasPrefix(svc.Boundary(svc.Default(), filepath.Join(ws, "proj.git", "config")), sandboxpolicy.BoundaryProtected))
}

// TestProtectedAtFollowsTheCallsRoots: a `.git` file in one root of the
// call (a client's first announced root) protects the gitdir it names in
// another (its second), though neither is the deployment's workspace root.
func TestProtectedAtFollowsTheCallsRoots(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base, "a/wt/.git: gitdir: ../../b/g\n", "b/g/config: c\n", "deploy/")
	svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: filepath.Join(base, "deploy"), TempRoots: []string{}})
	require.NoError(t, err)
	pol := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: filepath.Join(base, "a"), OtherRoots: []string{filepath.Join(base, "b")}}
	rule, err := svc.ProtectedAt(context.Background(), pol, filepath.Join(base, "b/g/config"))
	require.NoError(t, err)
	assert.Contains(t, rule, filepath.Join(base, "b/g"))
	// Without the root holding the `.git` file, nothing names it.
	pol.WorkspaceRoot = filepath.Join(base, "deploy")
	rule, err = svc.ProtectedAt(context.Background(), pol, filepath.Join(base, "b/g/config"))
	require.NoError(t, err)
	assert.Empty(t, rule)
}

// TestProtectionSearchesOnce: one Protection (one mutation, however many
// entries it decides) searches the roots once, at its first need; a new
// one sees what changed since.
func TestProtectionSearchesOnce(t *testing.T) {
	svc, ws, extra := protectedService(t)
	target := filepath.Join(extra, "late.git/config")
	pr := svc.Protection(context.Background(), svc.Default())
	rule, err := pr.Rule(target)
	require.NoError(t, err)
	require.Empty(t, rule)
	fixture.Build(t, filepath.Dir(ws), "ws/late/.git: gitdir: ../../extra/late.git\n", "extra/late.git/")
	rule, err = pr.Rule(target)
	require.NoError(t, err)
	assert.Empty(t, rule, "the same Protection answers from its one search")
	rule, err = pr.Rule(filepath.Join(ws, "late/.git"))
	require.NoError(t, err)
	assert.Equal(t, ".git", rule, "names and patterns are decided at each call")
	rule, err = svc.Protection(context.Background(), svc.Default()).Rule(target)
	require.NoError(t, err)
	assert.Contains(t, rule, "late.git")
}

// TestBoundaryNamesWhatIsProtected (issue 23): the approval prompt's
// boundary says what a protected path is: git hooks, git config, a host-run
// file by name; history files of a repository are not protected under
// --vcs commit.
func TestBoundaryNamesWhatIsProtected(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base, "ws/.git/HEAD: ref: refs/heads/main\n", "ws/.git/objects/", "ws/.git/refs/heads/", "ws/.git/config: c\n", "ws/.git/hooks/")
	ws := filepath.Join(base, "ws")
	svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}})
	require.NoError(t, err)
	pol := svc.Default()
	for rel, want := range map[string]string{
		".git/hooks/post-commit": "(git hooks in .git)",
		".git/config":            "(git config in .git)",
		".mcp.json":              "(host-run file .mcp.json)",
		".vscode/tasks.json":     "(host-run file .vscode)",
		"a/.envrc":               "(host-run file .envrc)",
	} {
		assert.Equal(t, sandboxpolicy.BoundaryProtected+" "+want, svc.Boundary(pol, filepath.Join(ws, rel)), rel)
	}
	for _, rel := range []string{".git/index", ".git/refs/heads/x", ".git/objects/ab/cd", "src/main.go"} {
		assert.Empty(t, svc.Boundary(pol, filepath.Join(ws, rel)), rel)
	}
	entries, err := svc.ProtectedEntries(context.Background(), []string{ws}, os.Geteuid())
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range entries {
		kind := "bound"
		switch {
		case e.Split:
			kind = "split"
		case e.Missing:
			kind = "missing"
		}
		got[strings.TrimPrefix(e.Path, ws+"/")] = kind
	}
	assert.Equal(t, map[string]string{
		".git": "split", ".git/config": "bound", ".git/hooks": "bound",
		".git/config.worktree": "missing", ".git/commondir": "missing",
	}, got, "info/ and objects/info/ are missing, so nothing is reserved below them")
}

// TestConfigFileProtected (issue 23): harness's own configuration file is
// protected where it lies in a writable root: the fence's rule names it and
// the runner's list holds it; elsewhere it is nothing to either.
func TestConfigFileProtected(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base, "ws/harness.yaml: mode: workspace-write\n", "ws/other.yaml: x\n", "out/harness.yaml: x\n")
	ws := filepath.Join(base, "ws")
	for _, c := range []struct {
		file   string
		listed bool
	}{{file: filepath.Join(ws, "harness.yaml"), listed: true}, {file: filepath.Join(base, "out/harness.yaml")}} {
		svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}, ConfigFile: c.file})
		require.NoError(t, err)
		entries, err := svc.ProtectedEntries(context.Background(), []string{ws}, os.Geteuid())
		require.NoError(t, err)
		var paths []string
		for _, e := range entries {
			paths = append(paths, e.Path)
		}
		if c.listed {
			assert.Contains(t, paths, c.file)
			assert.Equal(t, sandboxpolicy.BoundaryProtected+" (harness's configuration file)", svc.Boundary(svc.Default(), c.file))
		} else {
			assert.NotContains(t, paths, c.file)
		}
		assert.Empty(t, svc.Boundary(svc.Default(), filepath.Join(ws, "other.yaml")))
	}
	_, err := sandboxpolicy.New(sandboxpolicy.Config{ConfigFile: "rel.yaml"})
	require.ErrorContains(t, err, "ConfigFile must be an absolute path")
}

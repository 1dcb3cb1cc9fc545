package sandbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
)

// TestProtectedVCSCommit: under --vcs commit a .git's members that make git
// run code or change where it looks stay protected, the rest is writable;
// under read-only the whole .git is.
func TestProtectedVCSCommit(t *testing.T) {
	commit, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{})
	require.NoError(t, err)
	ro, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{VCS: sandbox.VCSReadOnly})
	require.NoError(t, err)
	assert.Equal(t, sandbox.VCSCommit, commit.VCS())
	for _, c := range []struct {
		rel  string
		rule string // under commit; "" when writable
	}{
		{".git", ".git"},
		{"sub/.git", ".git"},
		{".git/config", "git config in .git"},
		{".git/config.worktree", "git config in .git"},
		{".git/hooks", "git hooks in .git"},
		{".git/hooks/post-commit", "git hooks in .git"},
		{".git/info/attributes", "git attributes in .git"},
		{".git/objects/info/alternates", "git alternates in .git"},
		{".git/commondir", "git pointer file commondir in .git"},
		{".git/worktrees/wt/gitdir", "git pointer file gitdir in .git"},
		{".git/worktrees/wt/commondir", "git pointer file commondir in .git"},
		{".git/worktrees/wt/config.worktree", "git config in .git"},
		{".git/modules/lib/config", "git config in .git"},
		{".git/modules/a/b/hooks/pre-commit", "git hooks in .git"},
		{".git/remotes/origin", "git remotes in .git"},
		{".git/index", ""},
		{".git/index.lock", ""},
		{".git/HEAD", ""},
		{".git/objects/ab/cdef", ""},
		{".git/refs/heads/main", ""},
		{".git/info/exclude", ""},
		{".git/worktrees/wt/index", ""},
		{".git/worktrees/wt/HEAD", ""},
		{".git/modules/lib/index", ""},
		{".hg/store/data", ".hg"},
		{".jj/repo/store", ".jj"},
		{".svn/wc.db", ".svn"},
	} {
		t.Run(c.rel, func(t *testing.T) {
			rule, ok := commit.Protected(c.rel, false)
			assert.Equal(t, c.rule, rule)
			assert.Equal(t, c.rule != "", ok)
			_, ok = ro.Protected(c.rel, false)
			assert.True(t, ok, "read-only protects every metadata path")
		})
	}
}

// TestProtectedHostRun: each host-run file is protected at any depth (a Top
// one at the root only) with its own rule; --unprotect drops exactly the
// one named; a name that is no default is refused.
func TestProtectedHostRun(t *testing.T) {
	p, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{})
	require.NoError(t, err)
	for _, h := range sandbox.HostRunFiles() {
		if h.Top {
			_, ok := p.Protected("a/b/"+h.Name, h.Dir)
			assert.False(t, ok, "a/b/"+h.Name+" is not at the top")
		}
		for _, rel := range []string{h.Name, "a/b/" + h.Name} {
			if h.Top && rel != h.Name {
				continue
			}
			rule, ok := p.Protected(rel, h.Dir)
			assert.True(t, ok, rel)
			assert.Equal(t, "host-run file "+h.Name, rule, rel)
			if h.Dir {
				rule, ok = p.Protected(rel+"/x", false)
				assert.True(t, ok, rel+"/x")
				assert.Equal(t, "host-run file "+h.Name, rule)
			}
		}
	}
	// The attack review's input: the root made a bare repository (HEAD,
	// objects/, refs/, a config with core.fsmonitor) once its .git was
	// made unusable; the top-level HEAD is refused, a .git's HEAD and a
	// remote's are not.
	rule, ok := p.Protected("HEAD", false)
	assert.True(t, ok)
	assert.Equal(t, "host-run file HEAD", rule)
	for _, rel := range []string{"mcp.json", ".vscodex", "src/.bashrc.d/x", ".config/other", ".git/HEAD", ".git/refs/remotes/origin/HEAD", "sub/HEAD"} {
		_, ok := p.Protected(rel, false)
		assert.False(t, ok, rel)
	}
	u, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{Unprotect: []string{".vscode/"}})
	require.NoError(t, err)
	_, ok = u.Protected(".vscode/tasks.json", false)
	assert.False(t, ok, "--unprotect .vscode allows it")
	_, ok = u.Protected(".idea/workspace.xml", false)
	assert.True(t, ok, "--unprotect .vscode leaves the others")
	assert.Len(t, u.HostRun(), len(sandbox.HostRunFiles())-1)

	_, err = sandbox.NewProtectedPaths(sandbox.ProtectOptions{Unprotect: []string{".git"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--unprotect ".git" names no default protected path`)
	_, err = sandbox.NewProtectedPaths(sandbox.ProtectOptions{VCS: "sometimes"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "commit, read-only")
}

// TestProtectedOtherClients (issue 35, the attack review's input): the
// project files other MCP clients and agents start commands from, each
// written by a command and by the write tool in the review, are host-run
// files at any depth.
func TestProtectedOtherClients(t *testing.T) {
	p, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{})
	require.NoError(t, err)
	for rel, rule := range map[string]string{
		".zed/settings.json":               "host-run file .zed",
		"opencode.json":                    "host-run file opencode.json",
		"opencode.jsonc":                   "host-run file opencode.jsonc",
		".opencode/plugin/x.ts":            "host-run file .opencode",
		".roo/mcp.json":                    "host-run file .roo",
		".kilocode/mcp.json":               "host-run file .kilocode",
		".amazonq/mcp.json":                "host-run file .amazonq",
		".continue/mcpServers/x.yaml":      "host-run file .continue",
		".junie/mcp/mcp.json":              "host-run file .junie",
		".windsurf/hooks.json":             "host-run file .windsurf",
		".aider.conf.yml":                  "host-run file .aider.conf.yml",
		"sub/dir/.zed/tasks.json":          "host-run file .zed",
		"sub/.aider.conf.yml":              "host-run file .aider.conf.yml",
		"sub/.continue/mcpServers/a/b.yml": "host-run file .continue",
		// Editors that run a language server or a script from the
		// directory, and hook managers whose installed hook runs what
		// their file names at the user's git commit.
		".helix/languages.toml":   "host-run file .helix",
		".nvim.lua":               "host-run file .nvim.lua",
		".exrc":                   "host-run file .exrc",
		".pre-commit-config.yaml": "host-run file .pre-commit-config.yaml",
		"sub/lefthook.yml":        "host-run file lefthook.yml",
	} {
		got, ok := p.Protected(rel, false)
		assert.True(t, ok, rel)
		assert.Equal(t, rule, got, rel)
	}
}

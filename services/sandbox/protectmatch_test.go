package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMatchPlainNamesAsGitignore (issue 34): the plain-name shortcut of
// match decides every path as the gitignore patterns themselves do, in
// their order (the last pattern matching wins, an exemption included), for
// the host-run files with and without deployment patterns that repeat,
// exempt or glob over their names.
func TestMatchPlainNamesAsGitignore(t *testing.T) {
	extras := [][]string{
		nil,
		{"*.pem"},
		{"!.envrc"},
		{".envrc", "!.envrc"},
		{"!.envrc", ".envrc"},
		{"secrets/", "!secrets/keep"},
		{"deploy", "/build/*.sh", "**/.config/git"},
		{".claude", "!.claude"},
		{"!HEAD"},
		{"a b", "x\\*y", "\\#x", "!!y", "c!d"},
	}
	paths := []string{
		".envrc", "a/.envrc", ".envrc/x", "a/b/.claude", ".claude/settings.json", "HEAD", "a/HEAD",
		"k.pem", "a/k.pem", "secrets", "secrets/keep", "secrets/other", "deploy/x", "a/deploy",
		"build/run.sh", "a/build/run.sh", ".config/git/config", "a/.config/git", "plain.txt",
		"a b", "x*y", "#x", "!y", ".claude/.envrc", ".envrc/.claude", "HEAD/.vscode", ".mcp.json", "sub/.mcp.json/inner", ".vscode", "src/.vscode/tasks.json",
	}
	for _, extra := range extras {
		p, err := NewProtectedPaths(ProtectOptions{Patterns: extra})
		require.NoError(t, err)
		for _, path := range paths {
			for _, isDir := range []bool{false, true} {
				t.Run(fmt.Sprintf("%q %s dir=%v", extra, path, isDir), func(t *testing.T) {
					parts := strings.Split(path, "/")
					want, wantOK := gitignoreMatch(p, parts, isDir)
					got, ok := p.match(parts, isDir)
					assert.Equal(t, wantOK, ok)
					assert.Equal(t, want, got)
				})
			}
		}
	}
}

// gitignoreMatch is match without the shortcut: every pattern through
// go-git's gitignore, the last deciding.
func gitignoreMatch(p ProtectedPaths, path []string, isDir bool) (string, bool) {
	for i := len(p.parsed) - 1; i >= 0; i-- {
		switch p.parsed[i].Match(path, isDir) {
		case gitignore.Exclude:
			if i < len(p.hostRun) {
				return "host-run file " + p.hostRun[i].Name, true
			}
			return p.patterns[i], true
		case gitignore.Include:
			return "", false
		}
	}
	return "", false
}

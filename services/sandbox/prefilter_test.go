package sandbox

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/stretchr/testify/assert"
)

// TestPrefilterNeverRulesOutAMatch checks the prefilter against the
// matcher itself: whenever it says a pattern cannot match a path, the
// gitignore matcher agrees, for every pattern and path below, as a file
// and as a directory.
func TestPrefilterNeverRulesOutAMatch(t *testing.T) {
	patterns := []string{
		"/home/u/.ssh", "/home/u/.cargo/credentials*", "/home/u/.docker/config.json", "/srv/secrets/",
		"/home/*/x", "/a/[bc]/d", `/a/\*/d`, ".env", ".env.*", "*.pem", "secrets/", "**/private/key.txt",
		"/home/u/.config/**/token", "id_*", "[.]env", `\#x`,
	}
	paths := []string{
		"home", "home/u", "home/u/.ssh", "home/u/.ssh/id", "home/u/.sshx", "home/v/.ssh", "home/u/.cargo/credentials.toml",
		"home/u/.cargo/config", "home/u/.docker/config.json", "home/u/.docker/config.json/x", "srv/secrets", "srv/secrets/a/b",
		"home/w/x", "a/b/d", "a/c/d/e", "a/*/d", "w/.env", "w/.env.local", "w/.envrc", "w/a/.env/x", "w/k.pem", "w/pem",
		"w/secrets", "w/secrets/x", "a/b/private/key.txt", "private/key.txt", "home/u/.config/gh/token",
		"home/u/.config/token", "w/id_rsa", "w/.env.example", "#x", "x/#x", "",
	}
	for _, p := range patterns {
		for _, neg := range []string{"", "!"} {
			g := gitignore.ParsePattern(neg+p, nil)
			f := newPrefilter(p)
			for _, path := range paths {
				parts := strings.Split(path, "/")
				for _, isDir := range []bool{false, true} {
					if !f.mayMatch(parts) {
						assert.Equal(t, gitignore.NoMatch, g.Match(parts, isDir), "pattern %q path %q dir %v", neg+p, path, isDir)
					}
				}
			}
		}
	}
	// And it does rule out what it is for.
	assert.False(t, newPrefilter("/home/u/.ssh").mayMatch([]string{"work", "src", "main.go"}))
	assert.False(t, newPrefilter("/home/u/.ssh").mayMatch([]string{"home"}))
	assert.False(t, newPrefilter(".env.*").mayMatch([]string{"work", "src", "main.go"}))
	assert.True(t, newPrefilter("*.pem").mayMatch([]string{"work"}), "no literal prefix: the matcher decides")
}

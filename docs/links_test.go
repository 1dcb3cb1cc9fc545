package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinksResolve: every relative link of README.md and docs/*.md names a
// file that exists, and a #fragment names a heading of the Markdown file it
// points at (GitHub's anchors: lower case, punctuation dropped, spaces as
// hyphens). Code blocks are left out.
func TestLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	require.NoError(t, err)
	pages = append(pages, filepath.Join("..", "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence := regexp.MustCompile("(?s)```.*?```")
	for _, page := range pages {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		text := fence.ReplaceAllString(string(b), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // a URL
			}
			path, frag, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
			}
			if !assert.FileExists(t, file, "%s links %s", page, target) || frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			assert.Contains(t, anchors(t, file), frag, "%s links %s: no such heading", page, target)
		}
	}
}

// anchors returns the anchors of the headings of the Markdown file.
func anchors(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^#+ (.*)$`).FindAllStringSubmatch(string(b), -1) {
		var s strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				s.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				s.WriteRune(r)
			}
		}
		out = append(out, s.String())
	}
	return out
}

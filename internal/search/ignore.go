package search

import (
	"io"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// AncestorIgnore returns the .gitignore patterns that apply to the
// directory root (absolute, canonical) from outside it (the enclosing
// repository's .git/info/exclude and the .gitignore files of root's
// ancestors up to the repository root), and root's path relative to the
// repository root as components: the domain the patterns of root's own
// .gitignore files are anchored under. Outside a repository, or at its
// root, it returns nil, nil. It is the rule Walk applies.
func AncestorIgnore(root string) ([]gitignore.Pattern, []string) {
	return ancestorPatterns(root)
}

// ParseIgnore parses the lines of one .gitignore file read from r (at most
// 1 MiB), its patterns anchored at domain (the directory holding it, as
// components relative to the repository root); blank lines and comments
// are skipped. The error is r's read error; the patterns read before it
// are returned.
func ParseIgnore(r io.Reader, domain []string) ([]gitignore.Pattern, error) {
	return parseIgnore(r, domain)
}

package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// MetadataNames are the names of version-control metadata, protected at any
// depth inside a writable root under workspace-write, existing or not: a
// `.git` directory or file (a gitdir pointer), `.hg`, `.jj`, `.svn`. Writing
// there turns a file write into code execution (a hook, core.fsmonitor in
// .git/config), so it takes an escalation.
func MetadataNames() []string { return []string{".git", ".hg", ".jj", ".svn"} }

// ProtectedPaths is the set of protected paths inside every writable root:
// version-control metadata (MetadataNames) and the patterns the deployment
// adds (--protect), gitignore-style, relative to the root. The zero value
// protects the metadata only. It is data plus predicates: deciding where a
// mutation actually lands is the enforcing backend's; finding the
// repositories that exist (a directory shaped like one, the gitdir a `.git`
// file names) is the policy service's (sandboxpolicy.Service.ProtectedAt
// and ProtectedEntries), which both tool families ask.
type ProtectedPaths struct {
	patterns []string
	parsed   []gitignore.Pattern
}

// NewProtectedPaths returns the protected paths with patterns added to the
// metadata. A pattern is a gitignore pattern (`*.pem`, `secrets/`,
// `/deploy/**`, `!keep.txt` to exempt a name an earlier pattern protects)
// matched against the path relative to the workspace root; matching a
// directory protects everything beneath it. Errors: an empty or blank
// pattern, a comment (a leading #), a NUL byte, or a malformed glob; the
// error names the pattern.
func NewProtectedPaths(patterns []string) (ProtectedPaths, error) {
	parsed := make([]gitignore.Pattern, 0, len(patterns))
	for _, p := range patterns {
		if err := checkPattern(p); err != nil {
			return ProtectedPaths{}, fmt.Errorf("protected path pattern %q: %w", p, err)
		}
		parsed = append(parsed, gitignore.ParsePattern(p, nil))
	}
	return ProtectedPaths{patterns: slices.Clone(patterns), parsed: parsed}, nil
}

// checkPattern refuses what is not a usable gitignore pattern.
func checkPattern(p string) error {
	switch {
	case strings.TrimSpace(p) == "":
		return errors.New("empty")
	case strings.HasPrefix(p, "#"):
		return errors.New("a comment, not a pattern (escape a leading # as \\#)")
	case strings.ContainsRune(p, 0):
		return errors.New("contains a NUL byte")
	}
	for part := range strings.SplitSeq(strings.TrimPrefix(p, "!"), "/") {
		if _, err := filepath.Match(part, ""); err != nil {
			return err
		}
	}
	return nil
}

// Describe returns the protected paths as `harness policy` lists them: the
// metadata names, then each pattern.
func (p ProtectedPaths) Describe() []string {
	out := make([]string, 0, 4+len(p.patterns))
	for _, n := range MetadataNames() {
		out = append(out, n+" (at any depth)")
	}
	for _, pat := range p.patterns {
		out = append(out, pat+" (--protect)")
	}
	return out
}

// Protected reports whether the entry at rel, a clean slash-separated path
// relative to a writable root ("" or "." is the root itself), is a protected
// path or lies beneath one, and names the rule: the metadata name met, or
// the pattern. isDir says whether the entry itself is a directory (for
// patterns ending in a slash). The root itself is never protected.
func (p ProtectedPaths) Protected(rel string, isDir bool) (rule string, ok bool) {
	if rel == "" || rel == "." {
		return "", false
	}
	parts := strings.Split(rel, "/")
	for _, part := range parts {
		if slices.Contains(MetadataNames(), part) {
			return part, true
		}
	}
	// Check each ancestor first, so a pattern matching a directory protects
	// what is beneath it even when an exemption matches the entry (as git
	// never re-includes a file whose directory is excluded).
	for i := 1; i <= len(parts); i++ {
		if rule, ok := p.match(parts[:i], i < len(parts) || isDir); ok {
			return rule, true
		}
	}
	return "", false
}

// ProtectedEntry reports whether the entry at rel is protected when none of
// its ancestors is: what a walk that never enters a protected directory
// asks of each entry it meets. It decides as Protected does, and allocates
// only when there are patterns to match.
func (p ProtectedPaths) ProtectedEntry(rel string, isDir bool) bool {
	if rel == "" || rel == "." {
		return false
	}
	if slices.Contains(MetadataNames(), rel[strings.LastIndexByte(rel, '/')+1:]) {
		return true
	}
	if len(p.parsed) == 0 {
		return false
	}
	_, ok := p.match(strings.Split(rel, "/"), isDir)
	return ok
}

// match returns the pattern that decides path, the last one that matches
// it, when that pattern protects rather than exempts.
func (p ProtectedPaths) match(path []string, isDir bool) (string, bool) {
	for i := len(p.parsed) - 1; i >= 0; i-- {
		switch p.parsed[i].Match(path, isDir) {
		case gitignore.Exclude:
			return p.patterns[i], true
		case gitignore.Include:
			return "", false
		}
	}
	return "", false
}

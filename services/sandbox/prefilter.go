package sandbox

import "strings"

// prefilter rules out, with string comparisons only, most paths a
// gitignore pattern cannot match, so a search asking about every entry it
// meets does not pay the pattern matcher for each rule (issue 24). It never
// rules out a path the pattern matches: an anchored pattern matches only a
// path whose first components equal its literal leading components, and a
// slash-free pattern only a path with a component that starts with its
// literal leading characters.
type prefilter struct {
	anchored []string // literal leading components of an anchored pattern
	name     string   // literal leading characters of a slash-free pattern
	kind     prefilterKind
}

type prefilterKind uint8

const (
	prefilterNone     prefilterKind = iota // no cheap test: ask the matcher
	prefilterAnchored                      // "/a/b/c*"
	prefilterName                          // "name*", "name/"
)

// newPrefilter returns the prefilter of pattern p (without a leading "!").
func newPrefilter(p string) prefilter {
	body := strings.TrimSuffix(p, "/")
	switch {
	case strings.HasPrefix(body, "/"):
		var lit []string
		for c := range strings.SplitSeq(body[1:], "/") {
			if literalPrefix(c) != c {
				break
			}
			lit = append(lit, c)
		}
		return prefilter{kind: prefilterAnchored, anchored: lit}
	case !strings.Contains(body, "/"):
		return prefilter{kind: prefilterName, name: literalPrefix(body)}
	}
	return prefilter{}
}

// literalPrefix returns s up to its first glob or escape character.
func literalPrefix(s string) string {
	if i := strings.IndexAny(s, `*?[\`); i >= 0 {
		return s[:i]
	}
	return s
}

// mayMatch reports whether the pattern may match path (its components);
// false means it cannot.
func (f prefilter) mayMatch(path []string) bool {
	switch f.kind {
	case prefilterAnchored:
		if len(path) < len(f.anchored) {
			return false
		}
		for i, c := range f.anchored {
			if path[i] != c {
				return false
			}
		}
		return true
	case prefilterName:
		for _, c := range path {
			if strings.HasPrefix(c, f.name) {
				return true
			}
		}
		return false
	}
	return true
}

package cmdjournal

import (
	"slices"
	"strings"
)

// change is what a command did to one path of a root.
type change struct {
	rel           string
	before, after *state // nil: absent
}

// diff compares the walks before and after a command: the paths created,
// deleted, modified (a file's content, a symlink's target, the type) or
// whose mode or owner changed (a directory's times do not count: they move
// with its entries), parents before children; and notJournaled, the paths
// skipped (see walk) whose own stat changed, or that moved into or out of
// the scope, in byte order. The content of a file is compared by key: the
// after walk read every file whose stat moved.
func diff(pre, post *manifest) (changes []change, notJournaled []string) {
	for rel, a := range pre.entries {
		b := post.entries[rel]
		if b == nil {
			if outOfScope(post, rel) {
				notJournaled = append(notJournaled, rel)
				continue
			}
			changes = append(changes, change{rel: rel, before: a})
			continue
		}
		if differs(a, b) {
			changes = append(changes, change{rel: rel, before: a, after: b})
		}
	}
	for rel, b := range post.entries {
		if pre.entries[rel] != nil {
			continue
		}
		if outOfScope(pre, rel) {
			notJournaled = append(notJournaled, rel)
			continue
		}
		changes = append(changes, change{rel: rel, after: b})
	}
	for rel, a := range pre.skipped {
		if b, ok := post.skipped[rel]; !ok || !a.st.sameStat(&b.st) {
			if _, moved := post.entries[rel]; !moved {
				notJournaled = append(notJournaled, rel)
			}
		}
	}
	for rel := range post.skipped {
		if _, ok := pre.skipped[rel]; !ok && pre.entries[rel] == nil {
			notJournaled = append(notJournaled, rel)
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return comparePaths(a.rel, b.rel) })
	return changes, topmost(notJournaled)
}

// topmost returns rels without duplicates and without the paths beneath
// another of them, in component order.
func topmost(rels []string) []string {
	slices.SortFunc(rels, comparePaths)
	var out []string
	for _, r := range rels {
		if n := len(out); n > 0 && (r == out[n-1] || strings.HasPrefix(r, out[n-1]+"/")) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// differs reports whether the entry changed between a and b.
func differs(a, b *state) bool {
	if a.typ != b.typ || a.mode != b.mode || a.uid != b.uid || a.gid != b.gid {
		return true
	}
	switch a.typ {
	case fileType:
		return a.hash != b.hash
	case symlinkType:
		return a.link != b.link
	}
	return false
}

// outOfScope reports whether m skipped rel or one of its ancestors.
func outOfScope(m *manifest, rel string) bool {
	for p := rel; p != ""; {
		if _, ok := m.skipped[p]; ok {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return false
}

// comparePaths orders slash-separated paths component by component, so a
// directory comes right before its entries.
func comparePaths(a, b string) int {
	return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
}

// parent returns the parent of the relative path rel ("" for a top-level
// entry, and for the root itself "\x00", which no path is).
func parent(rel string) string {
	if rel == "" {
		return "\x00"
	}
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

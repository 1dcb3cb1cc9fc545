package sandboxpolicy

import (
	"slices"

	"github.com/dsh-go/harness/internal/realpath"
)

// CanonicalPath returns the native realpath of p when it exists (every
// symlink resolved component by component, X-01), else p unchanged.
func CanonicalPath(p string) string {
	resolved, err := realpath.Of(p)
	if err != nil {
		return p
	}
	return resolved
}

// TempRoots returns the canonical temp roots pinned at construction.
func (s *Service) TempRoots() []string { return slices.Clone(s.cfg.TempRoots) }

// Roots returns what sandbox.WritableRoots takes beside a policy: the
// canonical temp roots, then the extra writable roots (Config.WritableRoots),
// pinned at construction and deduplicated. The file fence (fssandbox) and the
// command runner (execsandbox) both pass it, so they share one writable set.
func (s *Service) Roots() []string {
	return dedup(append(slices.Clone(s.cfg.TempRoots), s.cfg.WritableRoots...))
}

func dedup(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

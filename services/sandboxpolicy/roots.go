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

// TempRoots returns the canonical temp roots pinned at construction: what
// sandbox.WritableRoots takes beside a policy.
func (s *Service) TempRoots() []string { return slices.Clone(s.cfg.TempRoots) }

func dedup(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

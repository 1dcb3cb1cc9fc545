package sandboxpolicy

import (
	"path/filepath"
	"slices"
	"strings"

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

// WritableRoots returns the directories a mutation under policy may reach,
// deduplicated, in order: the policy's workspace root, then the temp roots
// canonicalized and pinned at construction. It is empty unless
// the mode is WorkspaceWrite (danger-full-access needs no list; read-only
// allows none). It is the only definition of the writable set.
//
// The workspace root is taken as the policy carries it, cleaned but not
// resolved again: Resolve canonicalized it when the policy was made, and
// resolving it anew would let a root later replaced by a symlink move the
// fence. A root that is not absolute or contains a NUL byte grants nothing
// (fail closed).
func (s *Service) WritableRoots(policy ExecutionPolicy) []string {
	if policy.Mode != WorkspaceWrite {
		return nil
	}
	roots := make([]string, 0, 1+len(s.cfg.TempRoots))
	if r := policy.WorkspaceRoot; filepath.IsAbs(r) && !strings.ContainsRune(r, 0) {
		roots = append(roots, filepath.Clean(r))
	}
	roots = append(roots, s.cfg.TempRoots...)
	return dedup(roots)
}

// TempRoots returns the canonical temp roots pinned at construction.
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

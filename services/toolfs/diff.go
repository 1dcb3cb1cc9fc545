package toolfs

import (
	udiff "github.com/aymanbagabas/go-udiff"
)

// unifiedDiff returns the unified diff, with 3 lines of context, from before
// (nil for a file that did not exist) to after, labeled with the display
// path; "" when nothing changed, before is unknown to be text, or the texts
// together exceed maxDiffInputBytes.
func unifiedDiff(dp string, before *string, after string, created bool) string {
	from, oldLabel := "", "/dev/null"
	switch {
	case before != nil:
		from, oldLabel = *before, "a"+dp
	case !created:
		// The prior content was not a usable diff basis (binary, too
		// large, changing): there is nothing honest to diff against.
		return ""
	}
	if from == after || len(from)+len(after) > maxDiffInputBytes {
		return ""
	}
	return udiff.Unified(oldLabel, "b"+dp, from, after)
}

// maxDiffInputBytes bounds the texts a diff is computed over (before and
// after together): diffing is superlinear and cannot be interrupted, so a
// larger change gets no diff ("") rather than seconds of CPU.
const maxDiffInputBytes = 1 << 20

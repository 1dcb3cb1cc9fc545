package protectscan

import (
	"fmt"
)

// BudgetError is the error of a scan that would have to read more than its
// budget allows: more than Options.MaxEntries entries of directories not
// answered from the cache, or a directory deeper than Options.MaxDepth below
// its root. Nothing of such a scan is returned: a protected path beyond the
// budget would be left writable, so the command must be refused.
type BudgetError struct {
	// Dir is the absolute path of the directory being read when the entry
	// budget ran out, or of the directory too deep to be read.
	Dir string
	// Entries is how many entries the scan had read from uncached
	// directories when it stopped.
	Entries int
	// Depth is the depth limit Dir exceeds, or 0 when the entry budget ran
	// out.
	Depth int
}

// Error names the directory and says the command is refused.
func (e *BudgetError) Error() string {
	if e.Depth > 0 {
		return fmt.Sprintf("protected-path scan: %s lies more than %d directories below its root; "+
			"the command is refused rather than run with protected paths left writable", e.Dir, e.Depth)
	}
	return fmt.Sprintf("protected-path scan: the budget of entries ran out at %d while reading %s; "+
		"the command is refused rather than run with protected paths left writable", e.Entries, e.Dir)
}

package landlock

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// Denied reports whether err, the failure of a mutation that the policy
// admitted and that ran under a domain of its writable roots (Run), is the
// domain's refusal rather than an ordinary permission error: err is EACCES,
// or EXDEV (Landlock's answer to a link or rename it refuses), and at least
// one of parents, the directories the mutation addressed its entries in, is no
// longer beneath the root it was opened under (dirfd's Parent.CheckBeneath, the
// fence's one containment predicate). A parent whose current path cannot be
// read counts as moved out: the refusal cannot be shown to be ordinary.
//
// The domain grants every write beneath its roots, so EACCES with every
// parent still inside comes from the file's own permissions (or another
// security module), and is the caller's ordinary permission error.
func Denied(err error, parents ...*dirfd.Parent) bool {
	if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EXDEV) {
		return false
	}
	for _, p := range parents {
		if p.CheckBeneath() != nil {
			return true
		}
	}
	return false
}

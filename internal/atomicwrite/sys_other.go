//go:build !linux

package atomicwrite

import (
	"errors"
	"fmt"
)

// Linux's values, never passed to a kernel here: dirfd refuses every open
// before a write gets this far.
const (
	oTmpfile        = 0x410000
	renameExchange  = 0x2
	renameNoReplace = 0x1
)

func renameat2(int, string, int, string, uint) error {
	return fmt.Errorf("%w: an atomic replace needs Linux's renameat2", errors.ErrUnsupported)
}

//go:build !linux

package landlock

import (
	"errors"
	"fmt"
)

// restrictSelf refuses: Landlock is Linux's.
func restrictSelf([]string, uint64) error {
	return fmt.Errorf("%w: Landlock is a Linux security module", errors.ErrUnsupported)
}

// onMainThread is never asked of a restricted worker here.
func onMainThread() bool { return false }

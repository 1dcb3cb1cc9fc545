//go:build !linux

package dirwatch

import (
	"errors"
	"fmt"
)

// Set watches nothing here: New refuses.
type Set struct{}

// New refuses: the watches are inotify's, which only Linux has.
func New(int) (*Set, error) {
	return nil, fmt.Errorf("%w: watching directories needs Linux's inotify", errors.ErrUnsupported)
}

// Add watches nothing.
func (s *Set) Add(string) bool { return false }

// Changed reports a change, so nothing is reused.
func (s *Set) Changed() bool { return true }

// Close does nothing.
func (s *Set) Close() error { return nil }

// Local reports no filesystem as seen whole.
func Local(int64) bool { return false }

// Budget is none.
func Budget() int { return 0 }

// MountTable is none.
func MountTable() []byte { return nil }

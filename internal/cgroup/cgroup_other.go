//go:build !linux

package cgroup

import (
	"errors"
	"fmt"
	"time"
)

// detect refuses: cgroups are Linux's, so Open fails and commands run
// without a group of their own.
func detect() (key string, create func() (backend, error), err error) {
	return "", nil, fmt.Errorf("cgroup: %w: control groups are Linux's", errors.ErrUnsupported)
}

// killAll is never reached here (no group is made).
func killAll(groupBackend, time.Duration) error { return errors.ErrUnsupported }

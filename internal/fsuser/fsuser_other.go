//go:build !linux

package fsuser

import (
	"errors"
	"fmt"
)

// errNotLinux is Do's error for a user on a system other than Linux: no
// other keeps a filesystem identity per thread (setfsuid), so nothing
// runs as another user there.
var errNotLinux = fmt.Errorf("%w: running as another user's filesystem identity needs Linux's setfsuid", errors.ErrUnsupported)

func (id *identity) save() error { return errNotLinux }

func set(int, int, []uint32, bool) error { return errNotLinux }

//go:build !linux

package protectscan

import (
	"errors"
	"fmt"
)

// errNotLinux is every walk's error on a system other than Linux: a root
// is opened with openat2's RESOLVE_NO_SYMLINKS, which no other system has.
var errNotLinux = fmt.Errorf("%w: the protected-path search needs Linux's openat2 (RESOLVE_NO_SYMLINKS)", errors.ErrUnsupported)

const oPath = 0

func openNoSymlinks(string, uint64) (int, error) { return -1, errNotLinux }

func sysGetdents(int, []byte) (int, error) { return 0, errNotLinux }

//go:build !linux

package protectscan

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// errNotLinux is every walk's error on a system other than Linux (dirfd
// refuses the roots first).
var errNotLinux = fmt.Errorf("%w: the protected-path search reads directories with Linux's getdents", errors.ErrUnsupported)

func sysGetdents(int, []byte) (int, error) { return 0, errNotLinux }

func ResolveLink(string, *unix.Stat_t) (string, bool) { return "", false }

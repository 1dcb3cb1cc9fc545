//go:build !linux

package dirfd

import (
	"errors"
	"fmt"
	"os"
)

// errNotLinux (errors.ErrUnsupported) is every open, rename and listing of this package on a
// system other than Linux: the fence is made of openat2's resolution
// flags (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS), which no other system
// has; harness's file tools refuse there rather than run unfenced.
var errNotLinux = fmt.Errorf("%w: the file fence needs Linux's openat2 (RESOLVE_BENEATH); harness's file tools run on Linux only", errors.ErrUnsupported)

// openHow is struct open_how's shape.
type openHow struct{ Flags, Mode, Resolve uint64 }

// Linux's values, never passed to a kernel here.
const (
	resolveBeneath      = 0x08
	resolveNoSymlinks   = 0x04
	resolveNoMagiclinks = 0x02
	renameNoReplace     = 0x1
)

func sysOpenat2(int, string, *openHow) (int, error) { return -1, errNotLinux }

func renameat2(int, string, int, string, uint) error { return errNotLinux }

func getdents(int, []byte) (int, error) { return 0, errNotLinux }

// OPath is Linux's O_PATH; none here.
const OPath = 0

// RenameNoReplace refuses: see errNotLinux.
func RenameNoReplace(oldpath, newpath string) error {
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errNotLinux}
}

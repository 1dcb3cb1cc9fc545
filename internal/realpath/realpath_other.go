//go:build !linux

package realpath

import (
	"errors"
	"path/filepath"
)

// errMoved is never returned here (once is the library's walk).
var errMoved = errors.New("the file moved while it was resolved")

// once is filepath.EvalSymlinks where there is no O_PATH or /proc/self/fd
// to ask the kernel with.
func once(abs string) (string, error) { return filepath.EvalSymlinks(abs) }

// Package realpath asks the kernel for canonical paths: open the path with
// O_PATH (which follows every symlink, opens nothing for I/O and never
// blocks on a FIFO) and read back the descriptor's path from /proc/self/fd.
// That is two syscalls however deep the path, and symlink loops come back as
// ELOOP.
package realpath

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Of returns the canonical path of the existing absolute path abs. Errors
// come from the OS (ENOENT, ENOTDIR, ELOOP, EACCES, ENAMETOOLONG). Without
// /proc it falls back to filepath.EvalSymlinks, which is slower and reports
// loops without an errno.
func Of(abs string) (string, error) {
	for range maxAttempts {
		resolved, err := once(abs)
		if !errors.Is(err, errMoved) {
			return resolved, err
		}
	}
	// The file kept being replaced under us: take the library's walk.
	return filepath.EvalSymlinks(abs)
}

// maxAttempts bounds the retries of Of while the file it opened keeps being
// replaced (an atomic rename by a writer) before the kernel names it.
const maxAttempts = 8

// Canonical returns the canonical path of the clean absolute path abs: the
// canonical path of its deepest existing ancestor joined with the missing
// suffix (spec L-09..L-12). A component that is a symlink loop is treated as
// missing, so the loop is reported by whatever operation meets it (L-49).
// Errors: ENOTDIR when a parent segment is not a directory, EACCES,
// ENAMETOOLONG.
func Canonical(abs string) (string, error) {
	resolved, err := Of(abs)
	if err == nil {
		return resolved, nil
	}
	if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ELOOP) {
		return "", err
	}
	parent := filepath.Dir(abs)
	if parent == abs {
		return abs, nil
	}
	up, err := Canonical(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(up, filepath.Base(abs)), nil
}

package fsbackend

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/fs"
)

// Resolve turns path into a target (L-05..L-15): DisplayPath is the lexical
// absolute join of the working directory (opts.Cwd, else Config.Cwd) and path;
// Key is the canonical path of the file, or of its deepest existing ancestor
// joined with the missing suffix (L-10, L-11). Errors: CodeNotFound for a
// blank path, a NUL byte, or a parent segment that is not a directory (L-14,
// L-15); CodeAborted; CodePermissionDenied; CodeIOError (e.g. a name too
// long).
func (f *Backend) Resolve(ctx context.Context, path string, opts fs.ResolveOptions) (fs.Target, error) {
	if err := checkCtx(ctx, "resolve"); err != nil {
		return fs.Target{}, err
	}
	dp, err := f.displayPath(path, opts)
	if err != nil {
		return fs.Target{}, err
	}
	var key string
	err = f.as.Do(func() (err error) {
		key, err = realpath.Canonical(dp)
		return err
	})
	if err != nil {
		return fs.Target{}, osErr("resolve", "resolve", dp, err)
	}
	// Re-check: the context may have ended while resolution ran (L-08).
	if err := checkCtx(ctx, "resolve"); err != nil {
		return fs.Target{}, err
	}
	return fs.Target{Key: fs.TargetKey(key), DisplayPath: dp}, nil
}

// displayPath validates path and joins it lexically to the working directory.
func (f *Backend) displayPath(path string, opts fs.ResolveOptions) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", newErr(fs.CodeNotFound, "resolve", "", nil, "file_path must be a non-empty string")
	}
	if strings.IndexByte(path, 0) >= 0 {
		shown := strings.ReplaceAll(path, "\x00", `\0`)
		return "", newErr(fs.CodeNotFound, "resolve", shown, unix.EINVAL,
			"cannot resolve %q: the path contains a NUL byte", shown)
	}
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	cwd := f.cfg.Cwd
	if opts.Cwd != "" {
		cwd = filepath.Join(f.cfg.Cwd, opts.Cwd) // an absolute opts.Cwd wins
		if filepath.IsAbs(opts.Cwd) {
			cwd = filepath.Clean(opts.Cwd)
		}
	}
	return filepath.Join(cwd, path), nil
}

// ProcessPath returns the canonical path of the target (L-16).
func (f *Backend) ProcessPath(target fs.Target) string { return string(target.Key) }

// FileURL returns the file:// URL of the canonical path (L-16).
func (f *Backend) FileURL(target fs.Target) string {
	return (&url.URL{Scheme: "file", Path: string(target.Key)}).String()
}

// Contains reports whether target's canonical path is root's or lies beneath
// it, component-wise: "/ws" does not contain "/ws-evil" (L-17).
func (f *Backend) Contains(root, target fs.Target) bool {
	return dirfd.Beneath(string(root.Key), string(target.Key))
}

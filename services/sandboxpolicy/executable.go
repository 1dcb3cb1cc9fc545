package sandboxpolicy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/sandbox"
)

// CodeExecutableExposed is the code of an *ExecutableError.
const CodeExecutableExposed errcode.Code = "EXECUTABLE_EXPOSED"

// ExecutableError says the server will not serve with its executable
// reached through a symlink inside a writable root: a command could point
// the link at a program of its own, which the client's next start of the
// path would run unconfined. (The file itself inside a writable root is no
// error: it is protected, read-only to both tool families.)
type ExecutableError struct {
	// Path is the executable's path as the server was started by it
	// (absolute).
	Path string
	// Link is the symlink met on the way, Root the writable root it lies
	// in.
	Link, Root string
	// Real is the file the path names now (canonical).
	Real string
}

func (e *ExecutableError) Error() string {
	return fmt.Sprintf("%s: harness was started as %s, which passes through the symlink %s inside the writable root %s: "+
		"a command could point it at a program of its own, which your client's next start of %s would run outside the sandbox. "+
		"Remedy: start harness by its real path (%s), or install it outside the writable roots (go install, /usr/local/bin)",
		CodeExecutableExposed, e.Path, e.Link, e.Root, e.Path, e.Real)
}

// Code is CodeExecutableExposed.
func (e *ExecutableError) Code() errcode.Code { return CodeExecutableExposed }

// executables returns cfg.Executables canonical, each once, or an
// *ExecutableError when a symlink met resolving one lies beneath a root
// some session may write (the workspace, temp, writable and principal
// roots), unless the mode is danger-full-access, under which commands run
// with the server's own rights and nothing is confined to protect it by.
// A path that does not resolve is left as it is (nothing to protect).
func (cfg Config) executables() ([]string, error) {
	roots := slices.Concat([]string{cfg.WorkspaceRoot}, cfg.TempRoots, cfg.WritableRoots, cfg.PrincipalRoots)
	var out []string
	for _, e := range cfg.Executables {
		if !filepath.IsAbs(e) {
			return nil, fmt.Errorf("sandboxpolicy: Executables must be absolute paths, got %q", e)
		}
		e = filepath.Clean(e)
		links := symlinksOn(e)
		canon := filepath.Clean(CanonicalPath(e))
		if cfg.Mode != sandbox.DangerFullAccess {
			for _, l := range links {
				for _, r := range roots {
					if r != "" && dirfd.Beneath(r, l) {
						return nil, &ExecutableError{Path: e, Link: l, Root: r, Real: canon}
					}
				}
			}
		}
		if !slices.Contains(out, canon) {
			out = append(out, canon)
		}
	}
	return out, nil
}

// symlinksOn returns where each symlink met resolving p lies (its
// directory canonical), in order; it stops where p does not resolve (and
// after 40 links, as the kernel does).
func symlinksOn(p string) []string {
	var links []string
	cur := "/"
	rest := strings.Split(p, "/")
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return links
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links = append(links, next); len(links) > 40 {
			return links
		}
		target, err := os.Readlink(next)
		if err != nil {
			return links
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return links
}

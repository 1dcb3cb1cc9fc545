package toolexec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// refusals are the kernel's refusal texts a confined write produces (EACCES
// from Landlock, EPERM, EROFS from a read-only mount) as shells and
// coreutils print them.
var refusals = []string{"Permission denied", "Operation not permitted", "Read-only file system"}

// quoted finds the paths tools quote in their messages: 'p', ‘p’, "p".
var quoted = regexp.MustCompile(`'([^']+)'|‘([^’]+)’|"([^"]+)"`)

// denial is one inferred refusal.
type denial struct{ path, refusal string }

// inferDenial reports whether stderr shows a refusal on a path that policy
// does not allow writing: a line with one of the refusals names the path
// quoted, or as the field before the refusal (`sh: 1: cannot create
// /x/y: Permission denied`). The path is taken relative to workdir. It is an
// inference: the runner cannot see the kernel's refusals, only what the
// command printed.
func (t *Tool) inferDenial(policy sandbox.ExecutionPolicy, workdir, stderr string) (denial, bool) {
	if policy.Mode == sandbox.DangerFullAccess {
		return denial{}, false
	}
	roots := policy.WritableRoots()
	for line := range strings.SplitSeq(stderr, "\n") {
		for _, r := range refusals {
			i := strings.Index(line, r)
			if i < 0 {
				continue
			}
			for _, p := range candidates(line[:i]) {
				if !filepath.IsAbs(p) {
					p = filepath.Join(workdir, p)
				}
				if forbidden(roots, p) {
					return denial{path: p, refusal: r}, true
				}
			}
		}
	}
	return denial{}, false
}

// candidates returns the path-like parts of the text before a refusal: the
// quoted ones, else the last colon-separated field (`cannot create /x/y`
// gives "/x/y").
func candidates(prefix string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(prefix, -1) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	prefix = strings.TrimRight(prefix, ": ")
	if i := strings.LastIndex(prefix, ": "); i >= 0 {
		prefix = prefix[i+2:]
	}
	fields := strings.Fields(prefix)
	if len(fields) == 0 {
		return nil
	}
	return fields[len(fields)-1:]
}

// forbidden reports whether writing p is outside every root (no roots: read
// only, everything is). p is canonicalized through its nearest existing
// ancestor, as the kernel would resolve it.
func forbidden(roots []string, p string) bool {
	if strings.HasPrefix(p, "/dev/") {
		return false // devices: a refusal there is not the fence's
	}
	canon := canonicalParent(filepath.Clean(p))
	for _, r := range roots {
		if dirfd.Beneath(r, canon) {
			return false
		}
	}
	return true
}

// canonicalParent returns p with its longest existing prefix resolved
// (every symlink in it followed).
func canonicalParent(p string) string {
	rest := ""
	dir := p
	for dir != "/" {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
	return filepath.Join(sandboxpolicy.CanonicalPath(dir), rest)
}

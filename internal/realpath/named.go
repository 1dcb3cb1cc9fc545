package realpath

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxLinks is how many symlinks Named follows, as the kernel does (ELOOP
// past 40).
const MaxLinks = 40

// Named resolves the absolute path p as the kernel does for a
// program of the host, but by reading each symlink on its way, and returns the
// path it leads to, with no symlink in it, and the links met, in order. A
// `..` goes to the parent of where the walk is (never cleaned away
// before the link it follows is read: `l2/../x` with l2 a link is x beside
// l2's target). A missing component ends the walk: the rest of p is kept
// as written (nothing there is a link), as is the rest past a component
// that cannot be looked at. Errors: more than MaxLinks links (a loop), a
// link that cannot be read, a link inside /proc (/proc/self/cwd leads to
// each reader's own directory: the review read it as the server's, and a
// command made the host's git configuration there).
func Named(p string) (string, []string, error) {
	var links []string
	cur, comps := "/", strings.Split(p, "/")
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		var st unix.Stat_t
		if unix.Lstat(next, &st) != nil {
			return filepath.Join(append([]string{next}, comps...)...), links, nil
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			cur = next
			continue
		}
		if cur == "/proc" || strings.HasPrefix(cur, "/proc/") {
			// Where a link of /proc leads depends on the process that
			// reads it (/proc/self/cwd is each reader's own directory):
			// never the server's answer for the host's program.
			return "", links, fmt.Errorf("the symlink %s, on the way to %s, leads through /proc, where each process reads its own", next, p)
		}
		if len(links) == MaxLinks {
			return "", links, fmt.Errorf("more than %d symlinks on the way to %s (a loop?)", MaxLinks, p)
		}
		target, ok := ReadLink(next)
		if !ok {
			return "", links, fmt.Errorf("cannot read the symlink %s", next)
		}
		links = append(links, next)
		if filepath.IsAbs(target) {
			cur = "/"
		}
		comps = append(strings.Split(target, "/"), comps...)
	}
	return cur, links, nil
}

// ReadLink returns what the symlink p names, and whether p is one that
// could be read.
func ReadLink(p string) (string, bool) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(p, buf)
	return string(buf[:max(n, 0)]), err == nil
}

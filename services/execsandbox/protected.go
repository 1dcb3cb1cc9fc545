package execsandbox

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
)

// Bounds of the walk that finds the protected paths inside a writable root.
const (
	// maxWalkDepth is how many directory levels below a root are searched.
	maxWalkDepth = 12
	// maxWalkEntries caps the entries read per root; a root holding more
	// is searched only up to this many.
	maxWalkEntries = 50000
)

// existingProtected returns the protected paths that exist inside roots
// (canonical absolute directories): each entry protect names, topmost only
// (what lies beneath a protected directory is not searched), and for a
// `.git` file the gitdir it points to when that lies inside the same root.
// The walk never follows symlinks and is bounded by maxWalkDepth and
// maxWalkEntries per root; a protected path created later, or lying beyond
// the bounds, is not found (see README.md).
func existingProtected(protect sandbox.ProtectedPaths, roots []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, root := range roots {
		entries := 0
		var walk func(dir, rel string, depth int)
		walk = func(dir, rel string, depth int) {
			list, err := os.ReadDir(dir)
			if err != nil {
				return
			}
			for _, e := range list {
				if entries >= maxWalkEntries {
					return
				}
				entries++
				path, relPath := filepath.Join(dir, e.Name()), e.Name()
				if rel != "" {
					relPath = rel + "/" + e.Name()
				}
				isDir := e.Type().IsDir()
				if _, ok := protect.Protected(relPath, isDir); ok {
					add(path)
					if e.Name() == ".git" && e.Type().IsRegular() {
						if gd, ok := gitdirOf(path, root); ok {
							add(gd)
						}
					}
					continue
				}
				if isDir && depth < maxWalkDepth {
					walk(path, relPath, depth+1)
				}
			}
		}
		walk(root, "", 1)
	}
	return out
}

// gitdirOf returns the directory a `.git` file's "gitdir: PATH" line names
// (relative to the file's directory when not absolute), when it is a real
// directory (not a symlink) inside root.
func gitdirOf(file, root string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }()
	line, _ := bufio.NewReader(f).ReadString('\n')
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", false
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(file), target)
	}
	target = filepath.Clean(target)
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	fi, err := os.Lstat(target)
	if err != nil || fi.Mode().Type() != fs.ModeDir {
		return "", false
	}
	return target, true
}

// protectedIn returns the protected paths that exist inside roots with
// their identity, for the bubblewrap isolation.
func protectedIn(protect sandbox.ProtectedPaths, roots []string) ([]subproc.Protected, error) {
	paths := existingProtected(protect, roots)
	out := make([]subproc.Protected, 0, len(paths))
	for _, p := range paths {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			continue
		}
		out = append(out, subproc.Protected{Path: p, Dev: st.Dev, Ino: st.Ino})
	}
	return out, nil
}

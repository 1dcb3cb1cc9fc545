package execsandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// aliasCache keeps the other names (hard links) found of each protected
// file of more than one link, so the walk that finds them
// (protectscan.Aliases) runs again only when that file's links or the
// writable roots changed: a link made, removed or renamed changes the
// file's ctime.
type aliasCache struct {
	mu sync.Mutex
	m  map[devIno]aliasListing
}

type devIno struct{ dev, ino uint64 }

type aliasListing struct {
	ctime unix.Timespec
	nlink uint64
	roots string
	names []string
}

// maxAliases is how many other names of one protected file a command's
// view protects; past it the command is refused (each is a bind, and
// bubblewrap's arguments are bounded).
const maxAliases = 64

// aliasWalks is how many times a walk for a file's other names runs while
// directories change under it before the command is refused.
const aliasWalks = 3

// withAliases returns entries with, for each protected regular file that
// has more than one link, and each of outside (a home's host-run files out
// of the roots: `~/.bashrc` hard-linked into the workspace
// `~/dotfiles`), its other names beneath roots as protected entries of
// their own (the same identity), sorted by path again. A
// protected file's read-only bind covers its path only: another name in a
// writable root would let a command write it (a user's dotfile
// hard-linked into a checkout; a `.git/config` a command linked while the
// host's rewrite left it writable, for every later command). Errors:
// protectscan.Aliases', and a file of more than maxAliases other names in
// the roots (the command is then refused).
func (c *aliasCache) withAliases(ctx context.Context, roots []string, entries []sandboxpolicy.ProtectedEntry, outside []string) ([]sandboxpolicy.ProtectedEntry, error) {
	var added []sandboxpolicy.ProtectedEntry
	var have map[string]bool
	files := make([]sandboxpolicy.ProtectedEntry, 0, len(entries)+len(outside))
	for _, e := range entries {
		if !e.Dir && !e.Missing && !e.Split {
			files = append(files, e)
		}
	}
	for _, p := range outside {
		files = append(files, sandboxpolicy.ProtectedEntry{Path: p}) // its identity is the one it has now
	}
	for _, e := range files {
		var lst unix.Stat_t
		if unix.Lstat(e.Path, &lst) != nil || lst.Nlink <= 1 {
			continue // the common case, in one system call
		}
		st, err := dirfd.StatNoSymlinks(e.Path)
		if err != nil || st.Nlink <= 1 || !dirfd.IsRegular(&st) {
			continue
		}
		if e.Dev == 0 && e.Ino == 0 {
			e.Dev, e.Ino = dirfd.Dev(&st), st.Ino
		} else if dirfd.Dev(&st) != e.Dev || st.Ino != e.Ino {
			continue // not the file the search found
		}
		names, err := c.aliases(ctx, roots, e.Path, &st)
		if err != nil {
			return nil, err
		}
		if have == nil {
			have = make(map[string]bool, len(entries))
			for _, x := range entries {
				have[x.Path] = true
			}
		}
		for _, n := range names {
			if !have[n] {
				have[n] = true
				added = append(added, sandboxpolicy.ProtectedEntry{Path: n, Dev: e.Dev, Ino: e.Ino})
			}
		}
	}
	if len(added) == 0 {
		return entries, nil
	}
	out := slices.Concat(entries, added)
	slices.SortFunc(out, func(a, b sandboxpolicy.ProtectedEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// stillAt reports whether each of names is still the file id, reached
// without a symlink on the way (a directory renamed above one moves it
// without touching the file's ctime; a symlink put in its place could
// lead the name back to the protected file itself while the real name
// sits elsewhere).
func stillAt(names []string, id devIno) bool {
	for _, n := range names {
		st, err := dirfd.StatNoSymlinks(n)
		if err != nil || uint64(st.Dev) != id.dev || st.Ino != id.ino { //nolint:unconvert // Dev is uint64 on most arches only
			return false
		}
	}
	return true
}

// aliasCacheMax bounds the files an aliasCache remembers; past it, it
// starts again empty.
const aliasCacheMax = 4096

// aliases returns the other names of the file at path (st: its stat)
// beneath roots, from the cache when its ctime, link count and the roots
// are as when they were found and each name is still that file. A walk
// that found fewer names than the file's links and may have missed one
// (protectscan.Aliases' complete: a directory it read changed while it
// ran, as when a command moves one holding a name from a directory not yet
// read into one already read) runs again, up to aliasWalks times; then the
// command is refused. Errors: the walk's (an unreadable directory with its
// remedy), past maxAliases names, and that one.
func (c *aliasCache) aliases(ctx context.Context, roots []string, path string, st *unix.Stat_t) ([]string, error) {
	key := devIno{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is uint64 on most arches only
	want := int(st.Nlink) - 1
	joined := strings.Join(roots, "\x00")
	c.mu.Lock()
	l, ok := c.m[key]
	c.mu.Unlock()
	if ok && l.ctime == st.Ctim && l.nlink == uint64(st.Nlink) && l.roots == joined && stillAt(l.names, key) { //nolint:unconvert // Nlink is uint64 on most arches only
		return l.names, nil
	}
	var names []string
	complete := false
	for walk := range aliasWalks {
		if walk > 0 {
			// Past the time a change stamped just before the last
			// walk counts as one during the next.
			time.Sleep(2 * protectscan.AliasesRacy)
		}
		var err error
		if names, complete, err = protectscan.Aliases(ctx, roots, key.dev, key.ino, path, min(want, maxAliases+1)); err != nil {
			if pe, ok := errors.AsType[*os.PathError](err); ok && errors.Is(err, unix.EACCES) {
				return nil, fmt.Errorf("the other names of %s (%d links): %w; make the directory readable (chmod u+rx %s) or remove the extra links", path, want+1, err, pe.Path)
			}
			return nil, fmt.Errorf("the other names of %s (%d links): %w", path, want+1, err)
		}
		if complete {
			break
		}
	}
	if len(names) > maxAliases {
		return nil, fmt.Errorf("%s has %d links, more than %d other names in the writable roots (each would be a read-only bind of the command's view); remove the extra links", path, want+1, maxAliases)
	}
	if !complete {
		return nil, fmt.Errorf("the other names of %s (%d links, %d found in the writable roots) could not be found: directories changed under each of %d walks (a command moving them?)", path, want+1, len(names), aliasWalks)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= aliasCacheMax {
		c.m = map[devIno]aliasListing{}
	}
	c.m[key] = aliasListing{ctime: st.Ctim, nlink: uint64(st.Nlink), roots: joined, names: names} //nolint:unconvert // Nlink is uint64 on most arches only
	return names, nil
}

// homeFilesOutside returns the paths of the host-run files (neither
// directories nor those read only at a root's top) of each of homes that
// lies out of roots: a hard link of one inside a root is a way to write it
// (withAliases).
func homeFilesOutside(homes []string, files []sandbox.HostRun, roots []string) []string {
	var out []string
	for _, h := range homes {
		if slices.ContainsFunc(roots, func(r string) bool { return dirfd.Beneath(r, h) }) {
			continue // its files are entries of the search when protected
		}
		for _, f := range files {
			if !f.Top && !f.Dir {
				out = append(out, filepath.Join(h, f.Name))
			}
		}
	}
	return out
}

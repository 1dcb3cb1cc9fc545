package execsandbox

import (
	"context"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
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

// withAliases returns entries with, for each protected regular file that
// has more than one link, its other names beneath roots as protected
// entries of their own (the same identity), sorted by path again. A
// protected file's read-only bind covers its path only: another name in a
// writable root would let a command write it (a user's dotfile
// hard-linked into a checkout; a `.git/config` a command linked while the
// host's rewrite left it writable, for every later command). Errors:
// protectscan.Aliases' (the command is then refused).
func (c *aliasCache) withAliases(ctx context.Context, roots []string, entries []sandboxpolicy.ProtectedEntry) ([]sandboxpolicy.ProtectedEntry, error) {
	var added []sandboxpolicy.ProtectedEntry
	for _, e := range entries {
		if e.Dir || e.Missing || e.Split {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(e.Path, &st) != nil || st.Nlink <= 1 || uint64(st.Dev) != e.Dev || st.Ino != e.Ino || st.Mode&unix.S_IFMT != unix.S_IFREG { //nolint:unconvert // Dev is uint64 on most arches only
			continue
		}
		names, err := c.aliases(ctx, roots, e.Path, &st)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !slices.ContainsFunc(entries, func(x sandboxpolicy.ProtectedEntry) bool { return x.Path == n }) &&
				!slices.ContainsFunc(added, func(x sandboxpolicy.ProtectedEntry) bool { return x.Path == n }) {
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

// stillAt reports whether each of names is still the file id: a directory
// holding one renamed (which leaves the file's ctime as it was) moved it.
func stillAt(names []string, id devIno) bool {
	for _, n := range names {
		var st unix.Stat_t
		if unix.Lstat(n, &st) != nil || uint64(st.Dev) != id.dev || st.Ino != id.ino { //nolint:unconvert // Dev is uint64 on most arches only
			return false
		}
	}
	return true
}

// aliasCacheMax bounds the files an aliasCache remembers; past it, it
// starts again empty.
const aliasCacheMax = 4096

// aliases returns the other names of the file at path (st: its lstat)
// beneath roots, from the cache when its ctime, link count and the roots
// are as when they were found and each name is still that file. A name
// outside the roots moved into them by the host (a directory renamed in
// from elsewhere) is not seen until the file's links change; a command
// cannot do that, nor make a link to a protected file it cannot write.
func (c *aliasCache) aliases(ctx context.Context, roots []string, path string, st *unix.Stat_t) ([]string, error) {
	key := devIno{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is uint64 on most arches only
	joined := strings.Join(roots, "\x00")
	c.mu.Lock()
	l, ok := c.m[key]
	c.mu.Unlock()
	if ok && l.ctime == st.Ctim && l.nlink == uint64(st.Nlink) && l.roots == joined && stillAt(l.names, key) { //nolint:unconvert // Nlink is uint64 on most arches only
		return l.names, nil
	}
	names, err := protectscan.Aliases(ctx, roots, key.dev, key.ino, path, int(st.Nlink)-1)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= aliasCacheMax {
		c.m = map[devIno]aliasListing{}
	}
	c.m[key] = aliasListing{ctime: st.Ctim, nlink: uint64(st.Nlink), roots: joined, names: names} //nolint:unconvert // Nlink is uint64 on most arches only
	return names, nil
}

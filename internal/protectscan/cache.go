package protectscan

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Bounds of a Scanner's cache.
const (
	// cacheMaxDirs is how many directories the cache remembers.
	cacheMaxDirs = 200_000
	// cacheMaxNames is how many names (subdirectories and protected
	// entries) the cache holds in all; a directory holding more than a
	// quarter of it alone is not cached.
	cacheMaxNames = 1_000_000
	// racyWindowNanos is the racy-timestamp window: a directory whose mtime
	// is within it of its reading (or later) is read again, since an entry
	// added in the same clock tick as the reading leaves the mtime as read.
	racyWindowNanos = int64(2e9)
)

// dirKey identifies a cached directory: its identity, where it lies in its
// root (Match decides by that path), and the owner rule it was read under
// (owner is -1 outside a Shared root).
type dirKey struct {
	dev, ino uint64
	rel      string
	owner    int
}

// found is one protected entry of a directory, as lstat saw it.
type found struct {
	name     string
	dev, ino uint64
	uid      uint32
	typ      uint8 // unix.DT_*
}

// subdir is one subdirectory of a directory: its name, and the inode its
// directory record gave (only a hint of which cached listing is its: see
// dirCache.needsFD).
type subdir struct {
	name string
	ino  uint64
}

// listing is what a reading of a directory found. It is never modified once
// cached, except seen (under the cache's lock).
type listing struct {
	mtime, ctime int64 // nanoseconds, from the fstat before the reading
	readAt       int64 // wall clock (Unix nanoseconds) at or before the reading
	subdirs      []subdir
	protected    []found
	seen         uint64 // the last scan that used it
	// ino is the directory's inode; marks the repository markers seen in
	// it (repoHEAD, ...): a directory shaped like a repository (bare, or
	// a gitdir) is protected whole.
	ino   uint64
	marks uint8
}

// The repository markers of a listing: what git's is_git_directory looks
// for (a HEAD file, and a commondir file or objects and refs directories).
const (
	repoHEAD uint8 = 1 << iota
	repoCommondir
	repoObjects
	repoRefs
)

// repo reports whether l's directory is shaped like a git repository.
func (l *listing) repo() bool {
	return l.marks&repoHEAD != 0 && (l.marks&repoCommondir != 0 || l.marks&(repoObjects|repoRefs) == repoObjects|repoRefs)
}

// names is how many names l holds.
func (l *listing) names() int { return len(l.subdirs) + len(l.protected) }

// needsFD reports whether using l takes a descriptor of its directory: to
// descend into a subdirectory, or to read a `.git` file. A directory whose
// fresh listing does not is revalidated by one lstat from its parent and
// never opened.
func (l *listing) needsFD() bool {
	if len(l.subdirs) > 0 {
		return true
	}
	for i := range l.protected {
		if l.protected[i].name == ".git" && l.protected[i].typ == unix.DT_REG {
			return true
		}
	}
	return false
}

// fresh reports whether l still describes the directory st describes (the
// caller matched the identity): neither mtime nor ctime moved, and the mtime
// lies before the racy window of the reading.
func (l *listing) fresh(st *unix.Stat_t) bool {
	return l.mtime == st.Mtim.Nano() && l.ctime == st.Ctim.Nano() &&
		l.mtime < l.readAt-racyWindowNanos
}

// dirCache maps directories to their last reading. It is safe for concurrent
// use.
type dirCache struct {
	mu    sync.Mutex
	dirs  map[dirKey]*listing
	names int
}

func newDirCache() *dirCache {
	return &dirCache{dirs: map[dirKey]*listing{}}
}

// get returns the cached listing of k when it is fresh for st, marking it
// used by scan seq.
func (c *dirCache) get(k dirKey, st *unix.Stat_t, seq uint64) (*listing, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.dirs[k]
	if !ok || !l.fresh(st) {
		return nil, false
	}
	l.seen = seq
	return l, true
}

// cachedLeaf reports whether a listing is cached for k, fresh or not, and
// needs no descriptor of its directory (listing.needsFD). It is a hint that
// spares the lstat of a directory that will be opened anyway; it marks
// nothing used.
func (c *dirCache) cachedLeaf(k dirKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.dirs[k]
	return ok && !l.needsFD()
}

// put caches l for k, used by scan seq. When the cache is full it first
// drops the directories the scan seq has not used, then, if that freed less
// than a quarter, everything.
func (c *dirCache) put(k dirKey, l *listing, seq uint64) {
	if l.names() > cacheMaxNames/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.dirs[k]; ok {
		c.names -= old.names()
		delete(c.dirs, k)
	}
	if len(c.dirs) >= cacheMaxDirs || c.names+l.names() > cacheMaxNames {
		c.prune(seq)
	}
	l.seen = seq
	c.dirs[k] = l
	c.names += l.names()
}

// prune drops what scan seq has not used, or everything when that would
// leave the cache more than three quarters full.
func (c *dirCache) prune(seq uint64) {
	for k, l := range c.dirs {
		if l.seen != seq {
			c.names -= l.names()
			delete(c.dirs, k)
		}
	}
	if len(c.dirs) > cacheMaxDirs*3/4 || c.names > cacheMaxNames*3/4 {
		clear(c.dirs)
		c.names = 0
	}
}

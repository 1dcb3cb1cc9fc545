package protectscan

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// linkCacheMax bounds the directories a Scanner's linkCache remembers;
// past it, a directory is read at every search.
const linkCacheMax = 65_536

// linkListing is what linksIn read of one directory inside a protected
// directory: its symlinks' and subdirectories' names, and how many
// entries it holds (linksInsideMax's count).
type linkListing struct {
	mtime, ctime, readAt int64
	entries              int
	links, dirs          []string
}

// linkCache keeps linksIn's listings by directory identity, so a search
// reads again only the directories that changed (the review: 100
// `.vscode` directories of 4,100 files each, read at every command, took
// 0.8 s a command). A listing is used while its directory's mtime and
// ctime are as read and the mtime lies outside the racy window of the
// reading (an entry made in the same clock tick leaves the mtime as read).
type linkCache struct {
	mu sync.Mutex
	m  map[devIno]*linkListing
}

// list returns the listing of directory d, from the cache when current.
func (c *linkCache) list(d string) (*linkListing, bool) {
	var st unix.Stat_t
	if unix.Lstat(d, &st) != nil || !dirfd.IsDir(&st) {
		return nil, false
	}
	key := devIno{dirfd.Dev(&st), st.Ino}
	mtime, ctime := st.Mtim.Nano(), st.Ctim.Nano()
	c.mu.Lock()
	l, ok := c.m[key]
	c.mu.Unlock()
	if ok && l.mtime == mtime && l.ctime == ctime && l.mtime < l.readAt-racyWindowNanos {
		return l, true
	}
	l = &linkListing{mtime: mtime, ctime: ctime, readAt: time.Now().UnixNano()}
	ents, err := os.ReadDir(d)
	if err != nil {
		return nil, false
	}
	l.entries = len(ents)
	for _, e := range ents {
		switch e.Type() & os.ModeType {
		case os.ModeSymlink:
			l.links = append(l.links, e.Name())
		case os.ModeDir:
			l.dirs = append(l.dirs, e.Name())
		}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[devIno]*linkListing{}
	}
	if _, had := c.m[key]; had || len(c.m) < linkCacheMax {
		c.m[key] = l
	}
	c.mu.Unlock()
	return l, true
}

// beneath calls fn with the path of each symlink in top and beneath it,
// shallowest first, reading at most budget entries in all: a directory
// holding more than is left of them is passed over and its siblings read
// (the review's `.claude/plugins/market/` of 5,000 files hid
// `.claude/skills/foo/run.sh`'s link). Each directory's listing comes from
// c while it has not changed.
func (c *linkCache) beneath(top string, budget int, fn func(link string)) {
	for dirs := []string{top}; len(dirs) > 0 && budget > 0; {
		d := dirs[0]
		dirs = dirs[1:]
		l, ok := c.list(d)
		if !ok || l.entries > budget {
			continue // gone, unreadable, or more than is left of the bound
		}
		budget -= l.entries
		for _, n := range l.links {
			fn(filepath.Join(d, n))
		}
		for _, n := range l.dirs {
			dirs = append(dirs, filepath.Join(d, n))
		}
	}
}

// Links finds the symlinks beneath directories (Beneath), keeping each
// directory's listing by its identity while its mtime and ctime stay as
// read, so a directory is read again only once it changed: the deny-read
// set's links out of a credential store (a key kept in a dotfiles tree and
// linked into ~/.ssh), which the runner masks and the file tools refuse.
// The zero value is ready; it is safe for concurrent use.
type Links struct{ c linkCache }

// Beneath calls fn with the path of each symlink in top and beneath it,
// shallowest first, reading at most `most` entries in all (a directory holding
// more than is left of them passed over, its siblings read). top itself is
// not followed when it is a symlink.
func (l *Links) Beneath(top string, most int, fn func(link string)) { l.c.beneath(top, most, fn) }

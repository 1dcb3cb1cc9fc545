package protectscan

import (
	"os"
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

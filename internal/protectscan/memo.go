package protectscan

import (
	"context"
	"maps"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxMemos is how many root sets a Scanner keeps a reusable result for (one
// per session's roots: sessions with temp areas of their own differ).
const maxMemos = 8

// memo is the part of a finished scan of roots that the roots' directories
// decide (what the walk found, before the gitdirs a `.git` file names are
// read, followed and split: those are read again at each scan, a few
// files),
// reusable while no event that matters to it arrives.
type memo struct {
	roots   []Root
	ids     []devIno            // each root's identity when it was read
	mounts  []byte              // the mount table then (dirwatch.MountTable)
	dirs    map[devIno]struct{} // the directories whose listings it used
	found   map[string]Entry
	gitDirs map[string]bool
	links   map[string]bool
}

// rootsKey identifies a list of roots.
func rootsKey(roots []Root) string {
	var b strings.Builder
	for _, r := range roots {
		b.WriteString(r.Path)
		if r.Shared {
			b.WriteString("\x00" + strconv.Itoa(r.Owner))
		}
		b.WriteByte(0xff)
	}
	return b.String()
}

// reusable returns the memo of roots when one is kept, and the scanner's
// epoch, to hand to keep once the walk is done.
func (s *Scanner) reusable(key string, roots []Root, match Match) (*memo, uint64) {
	n := notify()
	n.subscribe(s)
	s.mu.Lock()
	s.match = match
	a := s.active[key]
	if a == nil {
		a = &scanning{roots: roots}
		s.active[key] = a
	}
	a.n++
	s.mu.Unlock()
	n.drain()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memos[key], s.epoch
}

// keep stores what w found for key unless an event that matters arrived
// since epoch or a directory of the walk went unwatched.
func (s *Scanner) keep(key string, w *walk, epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := w.rootIDs()
	if w.unwatched || s.epoch != epoch || !ok || w.mounts == nil {
		return
	}
	if len(s.memos) >= maxMemos {
		clear(s.memos)
	}
	s.memos[key] = &memo{
		roots: w.rootList(), ids: ids, mounts: w.mounts, dirs: w.dirs, found: maps.Clone(w.found), gitDirs: maps.Clone(w.gitDirs),
		links: maps.Clone(w.links),
	}
}

// scanning is a root set being scanned, by n scans; walked, while one of
// them walks it (not a reuse of a kept result), is closed when that walk
// ends.
type scanning struct {
	roots  []Root
	n      int
	walked chan struct{}
}

// awaitWalk waits, before a scan of key begins, for a walk of key already
// under way (issue 34, the first command: one started while the warm-up
// walks the same roots took the walk on again beside it), or ctx. The
// scan then finds that walk's result kept, unless something that matters
// changed meanwhile.
func (s *Scanner) awaitWalk(ctx context.Context, key string) {
	s.mu.Lock()
	var ch chan struct{}
	if a := s.active[key]; a != nil {
		ch = a.walked
	}
	s.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// walking marks key as walked by the caller, and returns the function
// that ends the mark (nothing when another walk of key holds it).
func (s *Scanner) walking(key string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.active[key]
	if a == nil || a.walked != nil {
		return func() {}
	}
	ch := make(chan struct{})
	a.walked = ch
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if a.walked == ch {
			a.walked = nil
		}
		close(ch)
	}
}

// done ends one scan of key.
func (s *Scanner) done(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.active[key]; a != nil {
		if a.n--; a.n <= 0 {
			delete(s.active, key)
		}
	}
}

// forget drops every kept result (a lost event: the queue overflowed).
func (s *Scanner) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	clear(s.memos)
}

// notice takes one event of the watched directory id at dir (name: the
// entry it concerns, "" for the directory itself): when it matters to a
// root set the scanner keeps a result for (among the directories that
// result used) or is scanning, those results are dropped and the epoch
// moves (a walk in progress keeps nothing).
func (s *Scanner) notice(now probes, id devIno, dir, name string, mask uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hit := false
	for key, m := range s.memos {
		if _, used := m.dirs[id]; used && s.matters(now, m.roots, m.found, dir, name, mask) {
			delete(s.memos, key)
			hit = true
		}
	}
	for _, a := range s.active {
		hit = hit || s.matters(now, a.roots, nil, dir, name, mask)
	}
	if hit {
		s.epoch++
	}
}

// matters reports whether an event of dir about name can change a scan of
// roots that found found (nil: a scan in progress, whose findings are not
// known yet), judged by what now finds there.
func (s *Scanner) matters(now probes, roots []Root, found map[string]Entry, dir, name string, mask uint32) bool {
	for _, r := range roots {
		rel, in := below(r.Path, dir)
		if in && s.mattersBelow(now, found, dir, rel, name, mask) {
			return true
		}
	}
	return false
}

// mattersBelow is matters for one root holding dir, rel below it:
//   - the directory itself removed or moved away: for a kept result, when a
//     finding lies at or beneath it; for a root or a scan in progress,
//     always (a root replaced without an event, its parent moved, is
//     caught by its identity: walk.reuse);
//   - a filesystem unmounted from it, its own attributes changed, or an
//     event lost: always;
//   - a name removed or moved away: when a finding lies at or beneath it,
//     or it is a repository marker (HEAD, commondir, objects, refs) of a
//     directory found whole as a repository;
//   - a name made, moved in, changed in mode or owner: what is there now
//     decides: nothing (gone again: its later events tell where; each walk
//     records where it found every directory, so an event is judged at its
//     directory's path now) or a runner's placeholder (it holds nothing,
//     and no scan reports it) does not matter; a directory, a repository
//     marker, a finding or a name the scanner's Match protects does;
//   - a file's content written: a `.git` file's (it names a gitdir; a kept
//     result reads every `.git` file found again all the same), and a
//     protected name's that is no placeholder any more (written in place).
func (s *Scanner) mattersBelow(now probes, found map[string]Entry, dir, rel, name string, mask uint32) bool {
	const gone = inDeleteSelf | inMoveSelf | inIgnored
	if found != nil && rel != "" && mask&gone != 0 && mask&inUnmount == 0 {
		// The directory itself removed (IN_IGNORED follows) or moved away:
		// what was found in it goes with it, and where a move puts it, its
		// new parent's event tells. A runner's placeholder (an empty
		// directory a walk that enters everything read) comes and goes with
		// each command.
		return foundAtOrBeneath(found, dir)
	}
	if name == "" || mask&(gone|inUnmount) != 0 {
		return true
	}
	marker := !s.enterRepos && (name == "HEAD" || name == "commondir" || name == "objects" || name == "refs")
	p := join(dir, name)
	switch {
	case mask&inModify != 0:
		if name == ".git" {
			return true
		}
		// A placeholder file written is one no longer (its content is the
		// mark): a protected name that a kept result left out as one.
		if _, ok := found[p]; ok || s.sockets || s.match == nil || !s.match(relName(rel, name), false) {
			return false
		}
		at := now.at(p)
		return at.err == nil && !at.placeholder(p)
	case mask&(inDelete|inMovedFrom) != 0:
		if found == nil || foundAtOrBeneath(found, p) {
			return true
		}
		// A marker gone changes the shape of a repository found whole.
		_, repo := found[dir]
		return marker && repo
	}
	at := now.at(p)
	if at.err != nil {
		// Gone again: its later events (a removal, a move into a watched
		// directory, whose path each walk keeps current) tell where.
		return !vanished(at.err)
	}
	if at.placeholder(p) {
		return false
	}
	st := &at.st
	if st.Mode&unix.S_IFMT == unix.S_IFDIR || marker {
		return true
	}
	if _, ok := found[p]; ok {
		return true
	}
	if s.sockets {
		return st.Mode&unix.S_IFMT == unix.S_IFSOCK
	}
	return s.match != nil && s.match(relName(rel, name), false)
}

// relName is name in the directory rel below a root ("" for the root).
func relName(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// foundAtOrBeneath reports whether found holds p or a path beneath it.
func foundAtOrBeneath(found map[string]Entry, p string) bool {
	if _, ok := found[p]; ok {
		return true
	}
	prefix := p + "/"
	for q := range found {
		if strings.HasPrefix(q, prefix) {
			return true
		}
	}
	return false
}

// rootList is the roots w scanned.
func (w *walk) rootList() []Root {
	out := make([]Root, 0, len(w.roots))
	for _, r := range w.roots {
		out = append(out, r.Root)
	}
	return out
}

// join is filepath.Join of a clean absolute directory and one entry's name,
// without cleaning again (the notifier judges many events a drain).
func join(dir, name string) string {
	if dir == "/" {
		return dir + name
	}
	return dir + "/" + name
}

package protectscan

import (
	"bytes"
	"errors"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/dirwatch"
)

// Kept current (issue 34): every directory a scan reads or revalidates is
// watched through one inotify instance the process shares, so a later scan of
// the same roots whose watched directories saw no change that matters to it
// reuses the earlier scan's result instead of walking the tree again. The
// events are drained synchronously at the start of each scan: the kernel
// queues an event before the call that changed the directory returns, so a
// change completed before the scan starts is always seen (a library that
// delivers events from a goroutine of its own could not promise that).
//
// Where notifications are unavailable (no inotify, a filesystem whose changes
// may come from elsewhere, the watch budget spent) nothing is reused: each
// scan is the cached walk it always was.

// watchMask is what a watched directory reports: a name created, removed or
// moved in or out, a name's attributes (owner, mode) changed, a name written
// (only a `.git` file's content matters: it names a gitdir), and the
// directory itself removed or moved.
const watchMask = inCreate | inDelete | inMovedFrom | inMovedTo |
	inAttrib | inModify | inDeleteSelf | inMoveSelf |
	inOnlydir | inExclUnlink

// notifier is the process's inotify instance and the directories it watches.
type notifier struct {
	mu   sync.Mutex
	fd   int                 // -1 when inotify is unavailable
	byID map[devIno]int32    // watched directory -> watch descriptor
	byWD map[int32]watchedAt // watch descriptor -> directory
	// retired are the descriptors of removed directories whose device and
	// inode number a newer directory took before their removal was drained.
	retired map[int32]struct{}
	limit   int
	buf     []byte
	readers map[*Scanner]struct{} // scanners holding a reusable result
	reason  string                // why nothing is watched, when fd is -1
	// seen are the events one drain delivered since its last watch
	// removal: a repeat is judged as the first was (each is judged by what
	// is there now), so a tree renamed in a loop costs a drain one
	// judgement per name, not one per event.
	seen map[event]struct{}
	// now is what one drain found at the paths it judged (probes): each
	// path is read once a drain, however many scanners and kept results
	// hear of it, and however many of its events were queued.
	now probes
}

// event is one inotify record as drain delivers it.
type event struct {
	wd   int32
	mask uint32
	name string
}

type devIno struct{ dev, ino uint64 }

type watchedAt struct {
	id   devIno
	path string // the directory's path when it was watched
}

var (
	notifyOnce sync.Once
	theNotify  *notifier
)

// notify returns the process's notifier, made at its first use.
func notify() *notifier {
	notifyOnce.Do(func() {
		n := &notifier{fd: -1, byID: map[devIno]int32{}, byWD: map[int32]watchedAt{}, retired: map[int32]struct{}{}, readers: map[*Scanner]struct{}{}, seen: map[event]struct{}{}, now: probes{}, buf: make([]byte, 64<<10)}
		fd, err := inotifyInit()
		if err != nil {
			n.reason = "inotify is unavailable: " + err.Error()
		} else {
			n.fd = fd
			n.limit = dirwatch.Budget()
		}
		theNotify = n
	})
	return theNotify
}

// Notifications reports whether scans are kept current by kernel
// notifications, and when not, why (inotify unavailable, or the watch
// budget spent: scans are then the bounded, cached walk): what `harness
// policy` says.
func Notifications() (bool, string) {
	n := notify()
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.fd < 0:
		return false, n.reason
	case len(n.byID) >= n.limit:
		return false, "the inotify watch budget (" + strconv.Itoa(n.limit) + " directories) is spent: directories beyond it are walked at each command"
	}
	return true, ""
}

// watch watches the directory open as fd (identity id, at path) and reports
// whether it is watched. The watch is made through the descriptor
// (/proc/self/fd/N), so it is on the directory opened, whatever its path has
// become.
func (n *notifier) watch(fd int, id devIno, path string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return false
	}
	if _, known := n.byID[id]; !known && len(n.byID) >= n.limit {
		return false
	}
	// Always asked of the kernel (it returns the same descriptor for an
	// inode it watches already): a device and inode number known here may
	// name a removed directory whose removal was not drained yet, or was
	// lost in a queue overflow, and a new directory that reuses the number
	// is not watched until it is added.
	return n.addLocked("/proc/self/fd/"+strconv.Itoa(fd), watchMask, id, path)
}

// watchPath is watch of the directory at path (not followed if a link),
// for a directory not opened: the caller checks, after it, that path still
// names the directory id (the watch is on what path named when it was
// added).
func (n *notifier) watchPath(id devIno, path string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return false
	}
	if _, known := n.byID[id]; !known {
		return false // never watched: the caller opens it
	}
	return n.addLocked(path, watchMask|inDontFollow|inOnlydir, id, path)
}

// addLocked adds the watch of target (a path the kernel resolves) for the
// directory id at path and records it. The caller holds mu.
func (n *notifier) addLocked(target string, mask uint32, id devIno, path string) bool {
	old, known := n.byID[id]
	wd32, err := inotifyAddWatch(n.fd, target, mask)
	if err != nil {
		return false
	}
	wd := int32(wd32) //nolint:gosec // a watch descriptor is a small int
	if known && old != wd {
		// The number's earlier directory is gone: its removal event is
		// still to come, and says nothing of this one.
		delete(n.byWD, old)
		n.retired[old] = struct{}{}
	}
	if prev, ok := n.byWD[wd]; ok && prev.id != id {
		delete(n.byID, prev.id) // the same inode under another identity: stale
	}
	n.byID[id] = wd
	n.byWD[wd] = watchedAt{id: id, path: path}
	return true
}

// known reports whether the directory id was watched (it lies on a
// filesystem whose changes inotify sees).
func (n *notifier) known(id devIno) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.byID[id]
	return ok
}

// subscribe makes s hear the events drained from now on.
func (n *notifier) subscribe(s *Scanner) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.readers[s] = struct{}{}
}

// drain reads the events queued when it starts (every change completed
// before it; those arriving meanwhile are left for the next drain, so a
// busy tree cannot keep it reading) and tells each subscribed scanner of
// those in its directories (Scanner.notice), each distinct event once (a
// loop renaming two files queues thousands of the same four). A queue
// overflow tells every scanner.
func (n *notifier) drain() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return
	}
	queued, err := queuedBytes(n.fd) // FIONREAD
	if err != nil {
		for r := range n.readers {
			r.forget() // unknown: nothing kept is trusted
		}
		return
	}
	defer clear(n.seen)
	defer clear(n.now)
	// All of it in one read: an event still in the kernel's queue absorbs
	// a later identical one (inotify_merge merges a new event into the last
	// queued one of the same watch, mask and name), so an event judged
	// after a reading of its path (probes) or after a repeat of it (seen)
	// could stand for a change made after that reading and never be judged
	// for it. Once every event is read, a change made while they are
	// judged queues an event of its own, for the next drain.
	buf := n.buf
	if queued > len(buf) {
		buf = make([]byte, queued)
	}
	for read := false; queued > 0; {
		if read {
			// A short read left events queued, which may have absorbed
			// changes made since the readings: judged afresh.
			clear(n.seen)
			clear(n.now)
		}
		// Never past the bytes queued at the start (FIONREAD counts whole
		// events): every event a drain judges was queued before it judged
		// any, so a repeat judged "now" adds nothing to the first.
		k, err := unix.Read(n.fd, buf[:queued])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if k <= 0 || err != nil {
			return // EAGAIN: nothing more queued
		}
		queued, read = queued-k, true
		for off := 0; off+sizeofInotifyEvent <= k; {
			ev := (*inotifyEvent)(unsafe.Pointer(&buf[off])) //nolint:gosec // the kernel's record layout
			end := off + sizeofInotifyEvent + int(ev.Len)
			if end > k {
				break
			}
			name := buf[off+sizeofInotifyEvent : end]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off = end
			e := event{wd: ev.Wd, mask: ev.Mask, name: string(name)}
			if e.mask&(inIgnored|inQOverflow) != 0 {
				// The watches change: what came before is no guide to
				// what follows.
				clear(n.seen)
				clear(n.now)
			} else if _, dup := n.seen[e]; dup {
				continue
			} else {
				n.seen[e] = struct{}{}
			}
			n.deliver(e.wd, e.mask, e.name)
		}
	}
}

// deliver hands one event to the scanners. A removed watch (the directory
// is gone) is forgotten.
func (n *notifier) deliver(wd int32, mask uint32, name string) {
	if _, ok := n.retired[wd]; ok {
		// A removed directory's watch whose number a newer one took.
		if mask&inIgnored != 0 {
			delete(n.retired, wd)
		}
		return
	}
	at, known := n.byWD[wd]
	if mask&inIgnored != 0 {
		delete(n.byWD, wd)
		if known && n.byID[at.id] == wd {
			delete(n.byID, at.id)
		}
	}
	if mask&inQOverflow != 0 {
		// Events were lost, removals among them: nothing known of the
		// watches is trusted. Those still live are known again as the
		// walks add them (the kernel gives back their descriptors).
		clear(n.byID)
		clear(n.byWD)
		clear(n.retired)
	}
	if mask&inQOverflow != 0 || !known {
		for s := range n.readers {
			s.forget()
		}
		return
	}
	for s := range n.readers {
		s.notice(n.now, at.id, at.path, name, mask)
	}
}

// watchDir watches the directory open as fd (stat st, at path) when it lies
// on a filesystem whose changes inotify sees, and reports whether it is
// watched.
func watchDir(fd int, st *unix.Stat_t, path string) bool {
	n := notify()
	id := devIno{dirfd.Dev(st), st.Ino}
	if !n.known(id) {
		var fs unix.Statfs_t
		if unix.Fstatfs(fd, &fs) != nil || !dirwatch.Local(int64(fs.Type)) { //nolint:unconvert // Type's width varies by platform
			return false
		}
	}
	return n.watch(fd, id, path)
}

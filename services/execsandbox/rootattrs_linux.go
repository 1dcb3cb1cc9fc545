package execsandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/dsh-go/harness/internal/dirfd"

	"golang.org/x/sys/unix"
)

// maxWatchRestores bounds how often a root is put back while its commands
// run: past it the root is put back only when each command ends. Two
// harness processes sharing a root each keep a record of their own; one
// made while the other's command had changed the root would have their
// watches undo each other without end.
const maxWatchRestores = 100

// timeSlack is how far a root's times may lie outside the span its
// commands ran in and still count as the kernel's own (file times come from
// a coarse clock).
const timeSlack = time.Second

// rootGuard keeps the writable roots themselves as they were (issue 35): a
// command may own a root (a root-owned workspace's commands run as uid 0,
// which owns the host's /tmp; any workspace's commands own their workspace
// root), and no mechanism a command is under refuses it a chmod, chgrp or
// utimes of the root's own inode, nor setting its extended attributes (a
// default ACL on the host's /tmp would make every file any user makes there
// ignore its umask). So the runner records each root's mode, owner, times
// and extended attributes (ACLs among them) before the first of the commands using it starts, puts
// back what differs as soon as inotify reports a change of the root's
// attributes (IN_ATTRIB on the root itself), and again when each of the
// commands ends. It is safe for concurrent use: while commands run, the
// record is the one made before the first of them started, so one
// command's change is never recorded as the root's state for another.
type rootGuard struct {
	mu    sync.Mutex
	roots map[string]*rootRecord
	// watch is the inotify instance watching the held roots (nil while
	// none is held), its descriptor watchFD (never File.Fd, which would
	// make its reads blocking, so Close could not end them); byWatch finds
	// a root by its watch descriptor.
	watch   *os.File
	watchFD int
	byWatch map[int32]*rootRecord
}

// rootRecord is a root's state before its commands started.
type rootRecord struct {
	// fd is the root, opened at the record: what is put back is that
	// inode's, whatever is at the path since.
	fd int
	st unix.Stat_t
	// xattrs are its extended attributes, by name (system.posix_acl_access
	// and system.posix_acl_default are its ACLs).
	xattrs  map[string]string
	started time.Time
	users   int
	// wd is its inotify watch (-1: none); restores counts the changes it
	// reported.
	wd       int32
	restores int
}

// heldRoots is the process's one rootGuard, shared by its Runners, so no
// Runner records a root another's command has changed.
var heldRoots = &rootGuard{roots: map[string]*rootRecord{}, byWatch: map[int32]*rootRecord{}}

// hold records each of roots (absolute paths of directories; a missing one
// is skipped) unless a running command already did, and returns what puts
// them back: call it once, when the command has ended. Its error names each
// root whose state could not be put back.
func (g *rootGuard) hold(roots []string) (restore func() error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var held []string
	for _, r := range roots {
		if rec := g.roots[r]; rec != nil {
			rec.users++
			held = append(held, r)
			continue
		}
		fd, err := unix.Open(r, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		rec := &rootRecord{fd: fd, started: time.Now(), users: 1, wd: -1}
		if unix.Fstat(fd, &rec.st) != nil {
			_ = unix.Close(fd)
			continue
		}
		if rec.xattrs, err = xattrsOf(fd); err != nil {
			_ = unix.Close(fd)
			continue
		}
		g.roots[r] = rec
		g.watchRoot(rec)
		held = append(held, r)
	}
	return func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		var errs []error
		for _, r := range held {
			rec := g.roots[r]
			if _, err := rec.restore(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r, err))
			}
			if rec.users--; rec.users == 0 {
				g.unwatch(rec)
				_ = unix.Close(rec.fd)
				delete(g.roots, r)
			}
		}
		if len(g.roots) == 0 && g.watch != nil {
			// The reader ends at its next read.
			_ = g.watch.Close()
			g.watch = nil
		}
		if len(errs) > 0 {
			return fmt.Errorf("cannot put back the writable roots' own mode, owner, times or extended attributes: %v", errs)
		}
		return nil
	}
}

// watchRoot watches rec's inode for attribute changes, starting the
// inotify instance and its reader when it is the first; without inotify
// (none left for this user) the root is put back at the end only. Call with
// g.mu held.
func (g *rootGuard) watchRoot(rec *rootRecord) {
	if g.watch == nil {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			return
		}
		g.watch, g.watchFD = os.NewFile(uintptr(fd), "inotify"), fd
		go g.read(g.watch)
	}
	// By the descriptor held: the inode recorded, whatever the path is now.
	wd, err := unix.InotifyAddWatch(g.watchFD, "/proc/self/fd/"+strconv.Itoa(rec.fd), unix.IN_ATTRIB)
	if err != nil {
		return
	}
	rec.wd = int32(wd) //nolint:gosec // watch descriptors are small
	g.byWatch[rec.wd] = rec
}

// unwatch ends rec's watch. Call with g.mu held.
func (g *rootGuard) unwatch(rec *rootRecord) {
	if rec.wd >= 0 && g.watch != nil {
		_, _ = unix.InotifyRmWatch(g.watchFD, uint32(rec.wd))
		delete(g.byWatch, rec.wd)
		rec.wd = -1
	}
}

// read puts back each root whose attributes watch reports changed, until
// watch is closed.
func (g *rootGuard) read(watch *os.File) {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := watch.Read(buf)
		if err != nil {
			return
		}
		g.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:])) //nolint:gosec // struct inotify_event's wd
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			next := off + unix.SizeofInotifyEvent + nameLen
			// An event with a name is of an entry in the root, not of the
			// root itself: it changes nothing to put back.
			if rec := g.byWatch[wd]; rec != nil && g.watch == watch && nameLen == 0 {
				// Only a put-back counts (not the event of the runner's own
				// change); the end of the command reports a failure.
				if put, _ := rec.restore(); put {
					if rec.restores++; rec.restores == maxWatchRestores {
						g.unwatch(rec)
					}
				}
			}
			off = next
		}
		g.mu.Unlock()
	}
}

// restore puts back the root's owner, extended attributes, mode and times
// where they differ from the record, and reports whether it put back
// anything. A time counts as changed when it differs from the record and
// lies outside the span since the record (timeSlack either side): creating
// a file in the root moves its mtime to now, which stays.
func (rec *rootRecord) restore() (bool, error) {
	var now unix.Stat_t
	if err := unix.Fstat(rec.fd, &now); err != nil {
		return false, err
	}
	put := false
	if now.Uid != rec.st.Uid || now.Gid != rec.st.Gid {
		if err := unix.Fchown(rec.fd, int(rec.st.Uid), int(rec.st.Gid)); err != nil {
			return false, err
		}
		put = true
	}
	// Before the mode: an access ACL's mask is the mode's group bits.
	xput, err := rec.restoreXattrs()
	if err != nil {
		return put, err
	}
	put = put || xput
	// After the chown, which may clear the set-group-ID bit.
	if err := unix.Fstat(rec.fd, &now); err != nil {
		return put, err
	}
	if now.Mode&0o7777 != rec.st.Mode&0o7777 {
		if err := unix.Fchmod(rec.fd, rec.st.Mode&0o7777); err != nil {
			return put, err
		}
		put = true
	}
	lo, hi := rec.started.Add(-timeSlack), time.Now().Add(timeSlack)
	set := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	changed := false
	for i, pair := range [][2]unix.Timespec{{now.Atim, rec.st.Atim}, {now.Mtim, rec.st.Mtim}} {
		t := time.Unix(pair[0].Unix())
		if pair[0] != pair[1] && (t.Before(lo) || t.After(hi)) {
			set[i], changed = pair[1], true
		}
	}
	if !changed {
		return put, nil
	}
	return true, unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(rec.fd), set, 0)
}

// restoreXattrs removes each extended attribute of the root the record
// lacks and sets each one that differs from it, and reports whether it
// changed any.
func (rec *rootRecord) restoreXattrs() (bool, error) {
	now, err := xattrsOf(rec.fd)
	if err != nil {
		return false, err
	}
	put := false
	for name := range now {
		if _, ok := rec.xattrs[name]; !ok {
			if err := unix.Fremovexattr(rec.fd, name); err != nil {
				return put, fmt.Errorf("extended attribute %s: %w", name, err)
			}
			put = true
		}
	}
	for name, v := range rec.xattrs {
		if w, ok := now[name]; !ok || w != v {
			if err := unix.Fsetxattr(rec.fd, name, []byte(v), 0); err != nil {
				return put, fmt.Errorf("extended attribute %s: %w", name, err)
			}
			put = true
		}
	}
	return put, nil
}

// xattrsOf is the extended attributes of the file open as fd, by name
// (none where the filesystem has none: ENOTSUP).
func xattrsOf(fd int) (map[string]string, error) {
	out := map[string]string{}
	names, err := xattrList(fd)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		v, err := xattrValue(fd, name)
		if errors.Is(err, unix.ENODATA) {
			continue // removed since the list
		}
		if err != nil {
			return nil, fmt.Errorf("extended attribute %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// xattrList is the names of fd's extended attributes.
func xattrList(fd int) ([]string, error) {
	return dirfd.ListXattrs(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) })
}

// xattrValue is the value of fd's extended attribute name.
func xattrValue(fd int, name string) (string, error) {
	v, err := dirfd.GetXattr(func(b []byte) (int, error) { return unix.Fgetxattr(fd, name, b) })
	return string(v), err
}

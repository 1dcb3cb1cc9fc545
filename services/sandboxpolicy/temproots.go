package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dsh-go/harness/services/session"
)

// eventTempRoots is the session event type that gives a session temp
// areas of its own in place of the deployment's (issue 26: an HTTP
// principal's private temp directory); its Data is a tempRootsEvent.
const eventTempRoots = "sandbox/temp-roots"

// tempRootsEvent is the payload of a "sandbox/temp-roots" event.
type tempRootsEvent struct {
	Roots []string `json:"roots"`
}

// SetTempRoots appends one "sandbox/temp-roots" event to s: from the next
// resolution on, the session's temp roots are roots (absolute, canonical
// directories; none: no temp area), replacing the deployment's TempRoots,
// so sessions of different principals share no writable temp area. The
// last event wins.
func SetTempRoots(s *session.Session, roots []string) error {
	return s.Append(session.Event{Type: eventTempRoots, Data: tempRootsEvent{Roots: slices.Clone(roots)}})
}

// tempRootsOf folds the session's log: the roots of its last
// "sandbox/temp-roots" event, each absolute and clean (others dropped),
// and false when there is none.
func tempRootsOf(s *session.Session) ([]string, bool) {
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if e, ok := events[i].Data.(tempRootsEvent); ok && events[i].Type == eventTempRoots {
			out := make([]string, 0, len(e.Roots))
			for _, r := range e.Roots {
				if filepath.IsAbs(r) {
					out = append(out, filepath.Clean(r))
				}
			}
			return out, true
		}
	}
	return nil, false
}

// SessionTempPrefix begins the name of every session temp directory
// NewSessionTemp makes.
const SessionTempPrefix = "harness-session-"

// SessionTemp is one session's own temp area (issue 34, "A temp that is
// the session's own"): a directory its maker holds an exclusive flock on
// for as long as the session lives, so a later server can tell one left
// behind by a server that died (RemoveOrphanTemps).
type SessionTemp struct {
	// Path is the directory's canonical path.
	Path string
	fd   int
}

// NewSessionTemp makes a new, empty directory of mode 0700 in parent (an
// existing directory, typically the first configured temp root) for one
// session and holds it: the session's own temp area, which the caller
// gives the session with SetTempRoots and removes with Remove when the
// session ends. When the process runs as root and owner (the session's
// workspace root, or "") belongs to another user, the directory is given
// that user and group, as whom the session's commands run (execsandbox).
// Errors: parent cannot hold a new directory, or the owner or the lock
// cannot be set (nothing is left behind then).
func NewSessionTemp(parent, owner string) (*SessionTemp, error) {
	dir, err := os.MkdirTemp(parent, SessionTempPrefix)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*SessionTemp, error) {
		_ = os.Remove(dir)
		return nil, err
	}
	if os.Geteuid() == 0 && owner != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(owner, &st); err == nil && st.Uid != 0 {
			if err := os.Lchown(dir, int(st.Uid), int(st.Gid)); err != nil {
				return fail(err)
			}
		}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = syscall.Close(fd)
		return fail(err)
	}
	return &SessionTemp{Path: CanonicalPath(dir), fd: fd}, nil
}

// Remove removes the temp area and everything in it (never following a
// symlink) and lets it go. Errors: what could not be removed.
func (t *SessionTemp) Remove() error {
	err := os.RemoveAll(t.Path)
	if t.fd >= 0 {
		_ = syscall.Close(t.fd)
		t.fd = -1
	}
	return err
}

// RemoveOrphanTemps removes, in parent, the session temp areas no live
// process holds (left by a server that was killed: nothing took its
// lock), and returns how many it removed. Only directories named as
// NewSessionTemp names them, never through a symlink.
func RemoveOrphanTemps(parent string) int {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), SessionTempPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.RemoveAll(dir) == nil {
			n++
		}
		_ = syscall.Close(fd)
	}
	return n
}

package sandboxpolicy

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-go/harness/internal/dirfd"
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
// It is made under a name RemoveOrphanTemps passes over (sessionTempMaking),
// locked, and only then renamed to its own (never over another): made
// under its own, another server starting meanwhile took it, not yet
// locked, for a dead server's and removed it (seen under load: `harness
// call` got "no such file or directory"). Errors: parent cannot hold a new
// directory, or the owner, the lock or the name cannot be set (nothing is
// left behind then).
func NewSessionTemp(parent, owner string) (*SessionTemp, error) {
	making, err := os.MkdirTemp(parent, sessionTempMaking)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*SessionTemp, error) {
		_ = os.Remove(making)
		return nil, err
	}
	if os.Geteuid() == 0 && owner != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(owner, &st); err == nil && st.Uid != 0 {
			if err := os.Lchown(making, int(st.Uid), int(st.Gid)); err != nil {
				return fail(err)
			}
		}
	}
	fd, err := syscall.Open(making, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = syscall.Close(fd)
		return fail(err)
	}
	for {
		own := filepath.Join(parent, SessionTempPrefix+strconv.FormatUint(rand.Uint64(), 36))
		err := dirfd.RenameNoReplace(making, own)
		if err == nil {
			return &SessionTemp{Path: CanonicalPath(own), fd: fd}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			_ = syscall.Close(fd)
			return fail(err)
		}
	}
}

// sessionTempMaking begins the name of a session temp directory while
// NewSessionTemp makes it.
const sessionTempMaking = ".harness-making-session-"

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
// lock), and returns how many it removed; and those a server died making
// (sessionTempMaking), once a minute old. Only directories named as
// NewSessionTemp names them, never through a symlink.
func RemoveOrphanTemps(parent string) int {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		switch {
		case !e.IsDir():
			continue
		case strings.HasPrefix(e.Name(), sessionTempMaking):
			if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < time.Minute {
				continue // being made: locked in a moment
			}
		case !strings.HasPrefix(e.Name(), SessionTempPrefix):
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

package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
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

// NewSessionTemp makes a new, empty directory of mode 0700 in parent (an
// existing directory, typically the first configured temp root) for one
// session and returns its canonical path: the session's own temp area
// (issue 34, "A temp that is the session's own"), which the caller gives
// the session with SetTempRoots and removes (os.RemoveAll) when the
// session ends. When the process runs as root and owner (the session's
// workspace root, or "") belongs to another user, the directory is given
// that user and group, as whom the session's commands run (execsandbox).
// Errors: parent cannot hold a new directory, or the owner cannot be set
// (nothing is left behind then).
func NewSessionTemp(parent, owner string) (string, error) {
	dir, err := os.MkdirTemp(parent, SessionTempPrefix)
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 && owner != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(owner, &st); err == nil && st.Uid != 0 {
			if err := os.Lchown(dir, int(st.Uid), int(st.Gid)); err != nil {
				_ = os.Remove(dir)
				return "", err
			}
		}
	}
	return CanonicalPath(dir), nil
}

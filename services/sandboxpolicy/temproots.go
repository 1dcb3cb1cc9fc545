package sandboxpolicy

import (
	"path/filepath"
	"slices"

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

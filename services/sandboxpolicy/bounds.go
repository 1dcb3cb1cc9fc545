package sandboxpolicy

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/session"
)

// eventBounds is the session event type that bounds a session's workspace
// roots (issue 26: an HTTP session's principal's workspaces); its Data is a
// boundsEvent.
const eventBounds = "workspace/bounds"

// boundsEvent is the payload of a "workspace/bounds" event: canonical
// absolute directories.
type boundsEvent struct {
	Dirs []string `json:"dirs"`
}

// SetBounds appends one "workspace/bounds" event to s: dirs (absolute,
// canonical, clean directories, never "/", at least one) are the only
// places the session's workspace roots may lie, an HTTP session's
// principal's workspaces. From the next resolution on, Resolve keeps only
// the roots (announced by the client, else the session's working
// directory, else the fallback) that lie within one of dirs, by whole
// path components, after each root's canonicalization and pinning (a
// root announced inside that resolves through a symlink to outside is
// dropped); when none is left, the roots are dirs. So a client's roots
// narrow a session's workspaces and never widen them, and the session
// never falls back to the server's working directory. The first bounds
// of a session hold for its life: a second call is an error and records
// nothing, as is an empty dirs or a dir that is not absolute and clean or
// is "/" (a nil session too).
func SetBounds(s *session.Session, dirs []string) error {
	switch {
	case s == nil:
		return errors.New("sandboxpolicy: bounds need a session")
	case len(dirs) == 0:
		return errors.New("sandboxpolicy: bounds need at least one directory")
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d || d == "/" {
			return fmt.Errorf("sandboxpolicy: bound %s is not an absolute clean directory other than \"/\"", strconv.Quote(d))
		}
	}
	if _, ok := boundsOf(s); ok {
		return errors.New("sandboxpolicy: the session's workspace bounds are already set; they hold for its life")
	}
	return s.Append(session.Event{Type: eventBounds, Data: boundsEvent{Dirs: slices.Clone(dirs)}})
}

// boundsOf returns the directories of the first "workspace/bounds" event of
// s, and false when there is none.
func boundsOf(s *session.Session) ([]string, bool) {
	for _, e := range s.Events() {
		if b, ok := e.Data.(boundsEvent); ok && e.Type == eventBounds {
			return b.Dirs, true
		}
	}
	return nil, false
}

// bounded returns the roots lying within one of bounds (by whole path
// components), in order; bounds themselves when none does.
func bounded(bounds, roots []string) []string {
	var out []string
	for _, r := range roots {
		if slices.ContainsFunc(bounds, func(b string) bool { return dirfd.Beneath(b, r) }) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return slices.Clone(bounds)
	}
	return out
}

package fs

import (
	"context"
	"errors"

	"github.com/dsh-go/harness/services/sandbox"
)

// ObservationKind says what a caller saw of a target.
type ObservationKind string

const (
	// Present means the target existed at Version.
	Present ObservationKind = "present"
	// Absent means the target did not exist.
	Absent ObservationKind = "absent"
	// Moved means the entry at From was moved to the target, where it is
	// now at Version; it was at Prior just before the move. What the
	// session saw of From (and, for a directory, of everything beneath
	// it) follows the entry; From is then absent.
	Moved ObservationKind = "moved"
)

// Observation is what the tool layer reports having seen of a target after a
// read (present with the whole-file version, or absent), a write or an edit
// (present with the new version) (spec A, "Events"; O-14), a delete
// (absent) or a move (moved, on the destination).
type Observation struct {
	Kind    ObservationKind
	Version Version   // set when Kind is Present or Moved
	From    TargetKey // set when Kind is Moved
	Prior   Version   // set when Kind is Moved
}

// Check reports whether obs of target is well formed: the
// target has a non-empty key and display path, the kind is Present, Absent
// or Moved, a Present or Moved observation has a non-empty version, and a
// Moved one a non-empty From and Prior. The error is
// the first violation's sentence, for example
// "fs/observed present version must be non-empty"; nil when well formed.
func (obs Observation) Check(target Target) error {
	switch {
	case target.Key == "":
		return errors.New("filesystem event targetKey must be non-empty")
	case target.DisplayPath == "":
		return errors.New("filesystem event displayPath must be non-empty")
	case obs.Kind != Present && obs.Kind != Absent && obs.Kind != Moved:
		return errors.New("fs/observed kind must be present or absent, or moved")
	case obs.Kind == Present && obs.Version == "":
		return errors.New("fs/observed present version must be non-empty")
	case obs.Kind == Moved && (obs.Version == "" || obs.Prior == "" || obs.From == ""):
		return errors.New("fs/observed moved version, prior and from must be non-empty")
	}
	return nil
}

// IntentPolicy decides the precondition of a tool's mutation (the spec's
// "fs/write-intent" and "fs/edit-intent"). A composition mounts at most one;
// with none, writes are unconditional and edits unguarded.
type IntentPolicy interface {
	// WriteIntent returns the intent of a write of target by owner's
	// session (a nil owner is a call with no session).
	WriteIntent(ctx context.Context, owner *sandbox.Owner, target Target) (WriteIntent, error)
	// EditGuard returns the version an edit of target by owner's session
	// must find, or an *Error refusing the edit.
	EditGuard(ctx context.Context, owner *sandbox.Owner, target Target) (Version, error)
}

// Observer is told, synchronously, of every observation the tool layer makes
// (the spec's "fs/observed"). An error fails the tool call that made the
// observation, even though any mutation it reports is already on disk (T-83).
// owner is the calling session, nil for a call with no session.
type Observer interface {
	Observe(owner *sandbox.Owner, target Target, obs Observation) error
}

// ObserverGroupTag is the fx value-group tag observers are contributed under.
const ObserverGroupTag = `group:"fs.observers"`

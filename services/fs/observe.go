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
)

// Observation is what the tool layer reports having seen of a target after a
// read (present with the whole-file version, or absent), a write or an edit
// (present with the new version) (spec A, "Events"; O-14).
type Observation struct {
	Kind    ObservationKind
	Version Version // set when Kind is Present
}

// Check reports whether obs of target is well formed: the
// target has a non-empty key and display path, the kind is Present or
// Absent, and a Present observation has a non-empty version. The error is
// the first violation's sentence, for example
// "fs/observed present version must be non-empty"; nil when well formed.
func (obs Observation) Check(target Target) error {
	switch {
	case target.Key == "":
		return errors.New("filesystem event targetKey must be non-empty")
	case target.DisplayPath == "":
		return errors.New("filesystem event displayPath must be non-empty")
	case obs.Kind != Present && obs.Kind != Absent:
		return errors.New("fs/observed kind must be present or absent")
	case obs.Kind == Present && obs.Version == "":
		return errors.New("fs/observed present version must be non-empty")
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

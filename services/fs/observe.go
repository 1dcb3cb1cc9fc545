package fs

import (
	"context"

	"github.com/dsh-go/harness/services/session"
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

// IntentPolicy decides the precondition of a tool's mutation (the spec's
// "fs/write-intent" and "fs/edit-intent"). A composition mounts at most one;
// with none, writes are unconditional and edits unguarded.
type IntentPolicy interface {
	// WriteIntent returns the intent of a write of target by sess (nil for a
	// call with no session).
	WriteIntent(ctx context.Context, sess *session.Session, target Target) (WriteIntent, error)
	// EditGuard returns the version an edit of target by sess must find, or
	// an *Error refusing the edit.
	EditGuard(ctx context.Context, sess *session.Session, target Target) (Version, error)
}

// Observer is told, synchronously, of every observation the tool layer makes
// (the spec's "fs/observed"). An error fails the tool call that made the
// observation, even though any mutation it reports is already on disk (T-83).
type Observer interface {
	Observe(sess *session.Session, target Target, obs Observation) error
}

// ObserverGroupTag is the fx value-group tag observers are contributed under.
const ObserverGroupTag = `group:"fs.observers"`

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
// (absent) or a move (moved, on the destination). A read that covered the
// whole file as text also reports its Content; a windowed or refused read, a
// write and an edit leave it zero (spec difference 14).
type Observation struct {
	Kind    ObservationKind
	Version Version     // set when Kind is Present or Moved
	Content Fingerprint // set when a read saw the whole text
	From    TargetKey   // set when Kind is Moved
	Prior   Version     // set when Kind is Moved
}

// Fingerprint identifies a file's content as a whole-file read saw it, so
// that a version mismatch with the same content (a touch, a copy away and
// back) is not stale (spec difference 14). Size is the file's size in bytes;
// Hash is the ContentHash of its text. The zero value is unknown: staleness
// is then decided by version alone.
type Fingerprint struct {
	Size int64
	Hash ContentHash
}

// ContentHash is the 128-bit XXH3 of a file's text as ReadText returns it
// (for a UTF-8 file, its bytes), as 32 lowercase hex digits; see
// textfile.TextHash. Consumers compare hashes for equality.
type ContentHash string

// Known reports whether fp carries a hash.
func (fp Fingerprint) Known() bool { return fp.Hash != "" }

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
// with none, writes are unconditional and edits unguarded. The tool layer
// runs a session's calls on one target one after another (intent, mutation,
// observation), so the precondition is always decided on the session's
// latest observation, its own writes' and edits' included; the backend then
// checks it under the target's lock (issue 13, item 11).
type IntentPolicy interface {
	// WriteIntent returns the intent of a write of target by owner's
	// session (a nil owner is a call with no session).
	WriteIntent(ctx context.Context, owner *sandbox.Owner, target Target) (WriteIntent, error)
	// EditGuard returns the present observation an edit of target by
	// owner's session is checked against (its Version and Content), or an
	// *Error refusing the edit.
	EditGuard(ctx context.Context, owner *sandbox.Owner, target Target) (Observation, error)
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

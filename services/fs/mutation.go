package fs

import "github.com/dsh-go/harness/services/sandbox"

// IntentKind says what a write may assume about the file it replaces.
type IntentKind uint8

const (
	// Unconditional creates the file or overwrites whatever is there.
	Unconditional IntentKind = iota
	// CreateIfAbsent creates the file and fails with CodeNotObserved when
	// anything already exists at the target; publication never replaces.
	CreateIfAbsent
	// ReplaceIfVersion replaces the file only while it is still at Version,
	// or, when Content is known, still has that size and content hash
	// (spec difference 14); otherwise, or when it is gone,
	// CodeStaleVersion.
	ReplaceIfVersion
)

// WriteIntent is the precondition of a write. The zero value is
// Unconditional.
type WriteIntent struct {
	Kind IntentKind
	// Version is the version the file must still have; only for
	// ReplaceIfVersion.
	Version Version
	// Content, when known, is the content that stands for Version when the
	// version differs (a metadata-only change); only for ReplaceIfVersion.
	Content Fingerprint
}

// UnconditionalWrite returns the intent that creates or overwrites.
func UnconditionalWrite() WriteIntent { return WriteIntent{} }

// CreateOnly returns the intent that creates and never replaces.
func CreateOnly() WriteIntent { return WriteIntent{Kind: CreateIfAbsent} }

// ReplaceSeen returns the intent that replaces only what obs saw: version
// obs.Version, or the same content when obs.Content is known.
func ReplaceSeen(obs Observation) WriteIntent {
	return WriteIntent{Kind: ReplaceIfVersion, Version: obs.Version, Content: obs.Content}
}

// WriteOptions carries a write's intent and the per-call sandbox policy. A nil
// Policy means the backend's deployment default (S-17).
type WriteOptions struct {
	Intent WriteIntent
	Policy *sandbox.ExecutionPolicy
	// DryRun computes the outcome (the fence, the intent and the text
	// conventions included) without writing anything: the outcome's
	// Version is the file's current version, "" when it is absent.
	DryRun bool
}

// Operation says whether a write created or replaced the file.
type Operation string

const (
	// OpCreate is a write that created the file.
	OpCreate Operation = "create"
	// OpUpdate is a write that replaced an existing file.
	OpUpdate Operation = "update"
)

// WriteOutcome is the result of a successful write (L-63..L-73). Before is
// the prior content, LF-normalized and without a byte-order mark, or nil when
// there was none or it could not serve as a diff basis (binary, invalid UTF-8,
// too large); After is the written content, LF-normalized, without a
// byte-order mark. Version is the version of the published file. Note is one
// sentence naming a change of the file's bytes beyond its text (a byte-order
// mark added, line endings converted), or "" (spec difference 10). InPlace,
// when not empty, says that the file was rewritten in place, not replaced
// atomically, and why (spec difference 9: the directory refused publication,
// or the file's owner or ACL could not be kept otherwise).
type WriteOutcome struct {
	Operation Operation
	Version   Version
	Before    *string
	After     string
	Note      string
	InPlace   string
}

// Replacement is one literal replacement of an edit: OldString replaced by
// NewString, LF-normalized before matching; OldString must be non-empty and,
// unless ReplaceAll, occur exactly once in the text the replacement meets.
type Replacement struct {
	OldString  string
	NewString  string
	ReplaceAll bool
}

// EditRequest asks EditText to replace OldString with NewString, or, when
// Edits is non-empty, to apply each of Edits in order, each to the text the
// previous one left, all or none (OldString, NewString and ReplaceAll must
// then be zero). A non-empty Version guards the edit: the file must still be
// at that version, or, when Content is known, have that size and
// content hash (spec difference 14). A nil Policy means the backend's
// deployment default.
type EditRequest struct {
	OldString  string
	NewString  string
	ReplaceAll bool
	Edits      []Replacement
	Version    Version
	Content    Fingerprint
	Policy     *sandbox.ExecutionPolicy
	// DryRun computes the outcome, fence and guard included, without
	// writing: the outcome's Version is the file's current version.
	DryRun bool
	// MaxBytes, when positive, refuses (CodeTooLarge, nothing written) to
	// edit a file larger than this many bytes, whatever size it reports, or
	// one whose edited content would be larger: an edit holds the whole file
	// in memory, twice, and a replace-all is sized before it is built.
	MaxBytes int64
}

// EditOutcome is the result of a successful edit: the new Version, the
// LF-normalized texts Before and After (without a byte-order mark), the
// number of Replacements made (over all edits), and a Note and InPlace like
// WriteOutcome's.
type EditOutcome struct {
	Version      Version
	Before       string
	After        string
	Replacements int
	Note         string
	InPlace      string
}

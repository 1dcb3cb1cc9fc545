// Package journal keeps the prior state of everything a file tool replaces,
// edits, moves or deletes (issue 25), content-addressed, durable before the
// change publishes, within a size cap: the store that services/undo reads to
// restore one change or a whole session. It decides what is kept, for how
// long and when a change must be refused (JOURNAL_FULL); it does not decide
// whether a change can be undone.
package journal

import "time"

// Kind is what a journaled change did.
type Kind string

// The kinds of change.
const (
	Write   Kind = "write"
	Edit    Kind = "edit"
	Move    Kind = "move"
	Delete  Kind = "delete"
	Mkdir   Kind = "mkdir"
	Undo    Kind = "undo"
	Command Kind = "command"
)

// Status is how far a change got: Pending (recorded, durable, and the
// change not yet known to have published: a crash leaves it so, and the
// disk says which side it is on), Applied, or Failed (it did not publish;
// nothing to undo); List and Get say Dropped of an entry whose segment was
// dropped to keep the journal within its cap (it cannot be undone).
type Status string

// The statuses.
const (
	Pending Status = "pending"
	Applied Status = "applied"
	Failed  Status = "failed"
	Dropped Status = "dropped"
)

// The node types.
const (
	File    = "file"
	Dir     = "dir"
	Symlink = "symlink"
)

// Node is the state of one filesystem entry: its canonical path, type (File,
// Dir, Symlink), permission bits (st_mode & 07777), owner, size in bytes, the
// content's key ("sha256:<hex>", a file's only), a symlink's target, its
// extended attributes, and its modification time (nanoseconds since the
// epoch). Ino and Dev identify a directory after a change (undo checks a
// moved directory by identity, not by content).
type Node struct {
	Path   string            `json:"path"`
	Type   string            `json:"type"`
	Mode   uint32            `json:"mode"`
	UID    uint32            `json:"uid"`
	GID    uint32            `json:"gid"`
	Size   int64             `json:"size,omitempty"`
	Hash   string            `json:"hash,omitempty"`
	Link   string            `json:"link,omitempty"`
	Xattrs map[string][]byte `json:"xattrs,omitempty"`
	MTime  int64             `json:"mtime,omitempty"`
	Ino    uint64            `json:"ino,omitempty"`
	Dev    uint64            `json:"dev,omitempty"`
}

// Entry is one journaled change. Paths are the canonical paths it targets
// (a move: source, then destination). Before is the prior state of every
// entry it changes, parents before children (a recursive delete: every
// entry of the tree); a path of Paths with no node in Before was absent.
// After is the state the change leaves, what undo checks the disk against;
// a path of Paths with no node in After is absent after the change. Kept is
// false when the prior content was not kept (NotKept says why: larger than
// the cap) and the change cannot be undone. Bytes is the content this entry
// added to the journal. Undoes, for an undo, is the entry it reversed.
// NotJournaled, for a command, are the paths it changed that are out of
// the snapshots' scope (.git, the deny-read set, credential file names,
// files over the cap, gitignored paths): undo cannot restore them;
// NotJournaledWhy gives each one's reason (path: why).
type Entry struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Session string    `json:"session,omitempty"`
	Client  string    `json:"client,omitempty"`
	Tool    string    `json:"tool"`
	Call    string    `json:"call,omitempty"`
	Kind    Kind      `json:"kind"`
	Paths   []string  `json:"paths"`
	Before  []Node    `json:"before,omitempty"`
	After   []Node    `json:"after,omitempty"`
	Kept    bool      `json:"kept"`
	NotKept string    `json:"not_kept,omitempty"`
	Bytes   int64     `json:"bytes"`
	Undoes  string    `json:"undoes,omitempty"`
	Status  Status    `json:"status"`
	// Dropped is set (by List and Get) on an entry whose segment was
	// dropped to keep the journal within its cap: its content is gone, and
	// its Status is Dropped.
	Dropped bool `json:"dropped,omitempty"`

	NotJournaled    []string          `json:"not_journaled,omitempty"`
	NotJournaledWhy map[string]string `json:"not_journaled_why,omitempty"`
}

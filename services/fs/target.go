package fs

import "time"

// TargetKey is the opaque identity of a file: backends use its canonical path.
// Consumers compare keys for equality and must not parse them.
type TargetKey string

// Version is an opaque token that changes whenever the file changes, even on
// a same-size rewrite with restored timestamps (L-19). Consumers compare
// versions for equality and must not parse them.
type Version string

// Target is a resolved path: the identity Key and the DisplayPath spelled the
// way the caller asked for it (lexical, symlinks unresolved).
type Target struct {
	Key         TargetKey `json:"targetKey"`
	DisplayPath string    `json:"displayPath"`
	// approvedRead is the canonical path a user approved this target's
	// one read of, in the deny-read set (ApproveRead); "" for none.
	approvedRead string
}

// ApproveRead returns t carrying the user's approval of one read of the
// canonical path canonical, which is in the deny-read set (issue 24): a
// confining backend then lets the reads of this call through when, and
// only when, the opened descriptor's real path is canonical (another path
// is refused with sandboxpolicy.CodeTargetChanged). The approval lives in
// the value: a target resolved again carries none.
func (t Target) ApproveRead(canonical string) Target {
	t.approvedRead = canonical
	return t
}

// ApprovedRead returns the canonical path of t's approved read, "" when t
// carries no approval (ApproveRead).
func (t Target) ApprovedRead() string { return t.approvedRead }

// FileType classifies a filesystem entry.
type FileType string

const (
	// TypeFile is a regular file.
	TypeFile FileType = "file"
	// TypeDirectory is a directory.
	TypeDirectory FileType = "directory"
	// TypeSymlink is a symbolic link; only Lstat reports it.
	TypeSymlink FileType = "symlink"
	// TypeOther is anything else: a FIFO, a socket, a device, or a symlink
	// that cannot be followed in a listing.
	TypeOther FileType = "other"
)

// Info is what Stat and Lstat report of a present target. Size is in bytes.
type Info struct {
	Type    FileType `json:"type"`
	Size    int64    `json:"size"`
	Version Version  `json:"version"`
}

// DirEntry is one entry of a directory listing (A-06, L-42..L-46). Files
// carry Size and Version, directories only Version; both carry ModTime. An
// entry whose metadata cannot be read (a dangling symlink, a symlink loop, a
// link into a directory the process may not search) carries none of them,
// has type TypeOther and says why in Reason (spec decision 16).
type DirEntry struct {
	Name string `json:"name"`
	// Path is the entry's slash-separated path relative to the listed
	// directory: Name for the directory's own entries, "sub/name" beneath
	// a subdirectory of a tree listing (ListWindow.Depth above 1).
	Path    string   `json:"path"`
	Type    FileType `json:"type"`
	Target  Target   `json:"target"`
	Version Version  `json:"version,omitempty"`
	Size    *int64   `json:"size,omitempty"`
	// ModTime is the last modification time of the entry (of its
	// destination for a symlink), in UTC; zero when its metadata could not
	// be read.
	ModTime time.Time `json:"modTime,omitzero"`
	// Symlink reports that the entry is a symbolic link: Type, Size,
	// ModTime and Version are its destination's, and a tree listing never
	// descends into it.
	Symlink bool `json:"symlink,omitempty"`
	// Reason is a short lowercase phrase (`dangling symlink`, `symlink
	// loop`, `permission denied`, or the OS's reason) when the entry's
	// metadata could not be read, or, for a directory of a tree listing,
	// why its entries could not be read (it is still listed; the walk goes
	// on); empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// Listing limits.
const (
	// MaxListDepth is the deepest tree ListDir walks: the directory's own
	// entries are depth 1. Ten levels show a project's layout; deeper
	// views are a glob's job.
	MaxListDepth = 10
	// MaxListTreeNames bounds the names a tree listing reads: no further
	// subdirectory is opened once this many names were read (the listed
	// directory's own names are always read whole, as at depth 1). It
	// bounds the work of a large offset in a large tree; it matches the
	// search walk's MaxSearchEntries.
	MaxListTreeNames = 1_000_000
)

// ListWindow selects the entries ListDir returns: entries
// Offset..Offset+Limit-1 (1-based) of the directory, or of the tree in
// depth-first order (each directory's entries in byte order of their names,
// a directory followed by its own entries).
type ListWindow struct {
	// Offset is the 1-based first entry; zero means 1.
	Offset int
	// Limit is the most entries returned; zero means all.
	Limit int
	// Depth is how many levels are listed, 1..MaxListDepth; zero means 1,
	// the directory's own entries. Above 1, each subdirectory's entries
	// follow it, down to Depth levels; a symlink is never descended.
	Depth int
	// Progress, when set, is called from the calling goroutine with the
	// number of names read so far, every thousand names or so.
	Progress func(names int)
}

// Listing is one window of a directory listing.
type Listing struct {
	// Entries are the window's entries, in the window's order.
	Entries []DirEntry
	// Total is the number of entries in the whole directory (Depth 1), or
	// in the tree down to Depth; a lower bound when Partial.
	Total int
	// Partial reports that a tree walk stopped before counting every
	// entry: once the window was full (entries past it were not walked),
	// or at MaxListTreeNames. Never set at Depth 1.
	Partial bool
	// WalkCapped reports that the walk stopped at MaxListTreeNames names:
	// subdirectories after that point were not read.
	WalkCapped bool
}

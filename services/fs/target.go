package fs

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
}

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
// carry Size and Version, directories only Version. An entry whose metadata
// cannot be read (a dangling symlink, a symlink loop, a link into a directory
// the process may not search) carries neither, has type TypeOther and says
// why in Reason (spec decision 16).
type DirEntry struct {
	Name    string   `json:"name"`
	Type    FileType `json:"type"`
	Target  Target   `json:"target"`
	Version Version  `json:"version,omitempty"`
	Size    *int64   `json:"size,omitempty"`
	// Reason is a short lowercase phrase (`dangling symlink`, `symlink
	// loop`, `permission denied`, or the OS's reason) when the entry's
	// metadata could not be read; empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// ListWindow selects the entries ListDir returns, in byte order of their
// names: entries Offset..Offset+Limit-1 (1-based).
type ListWindow struct {
	// Offset is the 1-based first entry; zero means 1.
	Offset int
	// Limit is the most entries returned; zero means all.
	Limit int
	// Progress, when set, is called from the calling goroutine with the
	// number of names read so far, every thousand names or so.
	Progress func(names int)
}

// Listing is one window of a directory listing.
type Listing struct {
	// Entries are the window's entries in byte order of their names.
	Entries []DirEntry
	// Total is the number of entries in the whole directory.
	Total int
}

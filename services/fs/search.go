package fs

import (
	"context"
	"time"
)

// CodeInvalidSearch is the code of a Glob or Grep the search refuses before
// reading anything: a pattern that does not parse, a glob with a "." or ".."
// element or a leading "/", a regular expression that can only match a line
// break, an unknown mode or context lines out of range. The tools report it
// as INVALID_ARGUMENT.
const CodeInvalidSearch Code = "FS_INVALID_SEARCH"

// ErrInvalidSearch is the sentinel of CodeInvalidSearch for errors.Is.
var ErrInvalidSearch = &Error{Code: CodeInvalidSearch}

// Searcher walks a directory tree for files by name (Glob) or by content
// (Grep). Like every read, a search is not fenced: it reads wherever the
// process can. The walk opens every entry beneath a handle on the base
// directory and never follows a symlink (neither a linked directory nor a
// linked file is visited), skips ".git", FIFOs, sockets and devices, visits
// a directory at most once, and stops after MaxSearchEntries entries.
// Results are slash-separated paths relative to the base.
type Searcher interface {
	// Glob returns the regular files beneath the directory base whose
	// relative path matches opts.Pattern, newest first (issue 16). Errors:
	// CodeInvalidSearch, CodeNotFound, CodeNotDirectory,
	// CodePermissionDenied, CodeAborted, CodeIOError.
	Glob(ctx context.Context, base Target, opts GlobOptions) (GlobResult, error)
	// Grep returns the lines matching opts.Pattern in the regular files
	// beneath base, or in base itself when it is a file, in walk order:
	// depth first, names in byte order (issue 16). A file with a NUL byte in
	// its first 8192 bytes is skipped as binary. Errors: CodeInvalidSearch,
	// CodeNotFound, CodeNotRegularFile (base is neither a directory nor a
	// regular file), CodePermissionDenied, CodeAborted, CodeIOError.
	Grep(ctx context.Context, base Target, opts GrepOptions) (GrepResult, error)
}

// Search limits.
const (
	// MaxSearchEntries is the number of directory entries one walk
	// examines; a walk that reaches it stops and reports Truncated. It
	// bounds the time and memory of a search started high in the tree.
	MaxSearchEntries = 1_000_000
	// DefaultSearchLimit is the results returned when a Limit is zero.
	DefaultSearchLimit = 1000
	// MaxGrepContext bounds GrepOptions.Context.
	MaxGrepContext = 100
)

// SearchScope says which entries a walk visits beyond the default: names
// starting with "." are skipped unless Hidden, and entries matched by the
// .gitignore files of the tree and of its ancestors up to the enclosing
// repository, and by .git/info/exclude, unless NoIgnore. ".git" is never
// visited.
type SearchScope struct {
	Hidden   bool
	NoIgnore bool
}

// GlobOptions tunes Glob.
type GlobOptions struct {
	// Pattern is a doublestar pattern over paths relative to the base
	// ("**/*.go", "cmd/*/main.go", "{a,b}/**"); one without "/" matches a
	// name at any depth ("*.go" is "**/*.go").
	Pattern string
	SearchScope
	// Limit caps the files returned; zero means DefaultSearchLimit.
	Limit int
}

// GlobFile is one file Glob found.
type GlobFile struct {
	// Path is slash-separated and relative to the base.
	Path    string
	ModTime time.Time
}

// GlobResult is what Glob found: Files newest first (ties in byte order of
// Path), at most Limit of them, out of Matched. Truncated reports that files
// were left out: more matched than Limit, or WalkCapped, the walk stopped
// at MaxSearchEntries (then Matched counts only what the walk saw).
// Unreadable counts the entries skipped because they could not be read,
// Denied those skipped because they are in the deny-read set (never opened).
type GlobResult struct {
	Files      []GlobFile
	Matched    int
	Truncated  bool
	WalkCapped bool
	Unreadable int
	Denied     int
}

// GrepMode selects what Grep reports.
type GrepMode string

// The grep modes.
const (
	// GrepFiles reports the files that match.
	GrepFiles GrepMode = "files_with_matches"
	// GrepCount reports each matching file with its number of matching
	// lines.
	GrepCount GrepMode = "count"
	// GrepContent reports the matching lines with their numbers, and
	// context lines.
	GrepContent GrepMode = "content"
)

// GrepOptions tunes Grep.
type GrepOptions struct {
	// Pattern is an RE2 regular expression (Go's regexp syntax) matched
	// against one line at a time ("." and classes never match the line
	// break; ^ and $ anchor at the line), or a literal when Literal.
	Pattern    string
	Literal    bool
	IgnoreCase bool
	// Mode is what to report; "" means GrepFiles.
	Mode GrepMode
	// Context is the lines shown before and after each match (GrepContent),
	// 0..MaxGrepContext.
	Context int
	// Glob, when set, keeps only the files whose relative path matches
	// this doublestar pattern ("*.go" matches the name at any depth).
	Glob string
	SearchScope
	// Limit caps the results: files (GrepFiles, GrepCount) or matching
	// lines (GrepContent); zero means DefaultSearchLimit.
	Limit int
	// MaxLineLength is the code points kept of a line; longer ones end
	// "... (line truncated to N chars)" like read's. Zero means 2000.
	MaxLineLength int
}

// GrepLine is one line of GrepContent output: its 1-based number, its text
// without the line ending (invalid UTF-8 replaced by U+FFFD, cut to
// MaxLineLength), and whether it matches (false for a context line).
type GrepLine struct {
	Number int
	Text   string
	Match  bool
}

// GrepFile is one file with matches: its slash-separated path relative to
// the base (the file's name when base is a file), its number of matching
// lines (GrepCount; in GrepContent those in Lines), and its lines
// (GrepContent).
type GrepFile struct {
	Path  string
	Count int
	Lines []GrepLine
}

// GrepResult is what Grep found. Truncated reports that results beyond
// Limit exist (the last file's lines may be cut) or WalkCapped, the walk
// stopped at MaxSearchEntries. Searched counts the files scanned, Binary
// those skipped as binary, Unreadable the entries that could not be read,
// Denied those skipped because they are in the deny-read set (issue 24: a
// denied directory is never entered, a denied file never scanned).
type GrepResult struct {
	Files      []GrepFile
	Truncated  bool
	WalkCapped bool
	Searched   int
	Binary     int
	Unreadable int
	Denied     int
}

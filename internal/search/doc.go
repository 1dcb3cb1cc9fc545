// Package search is the mechanics of the glob and grep tools: a walk over a
// directory tree that honors .gitignore files, doublestar globbing over that
// walk, and a line-oriented regular expression or literal search that scans
// files in parallel and reports in a deterministic order.
//
// Every directory and file is opened beneath a handle on the search root
// (internal/dirfd, openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS): a
// symlink is never descended into or read as a walk entry, not even one
// swapped in for a listed entry or a directory on its path mid-walk (the
// open fails with ELOOP and the entry is a problem). Files are opened
// non-blocking and checked with fstat, so a FIFO or a device is skipped, never
// read. A directory is visited at most once (by device and inode), so the walk
// ends even if a bind mount or a racing rename forms a loop. Every walk is
// capped in entries and cancellable through its context. A walk's Gate (the
// deny-read set, issue 24) keeps it out of what must not be read: an entry
// it skips is never opened, a directory or file it refuses once opened is
// never read, and both are counted (WalkStats.Denied). The walk root and a
// file searched alone get the gate's whole decision (Gate.Refuse); an entry
// beneath the root, reached through directories the gate passed and by no
// symlink, gets the entry's (Gate.RefuseEntry).
//
// What it does not do: it confines nothing but the walk (the root is
// whatever the caller passes; only the Gate decides what is read), it does not
// read global git configuration (core.excludesFile) or .ignore files, and a
// match in a line longer than MaxLineBytes is only found within one
// MaxLineBytes window of it.
package search

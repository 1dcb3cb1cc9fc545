// Package protectscan finds the protected paths that exist inside the
// writable roots: the version-control metadata (`.git`, `.hg`, `.jj`,
// `.svn`) at any depth, whatever else the caller's Match protects, a
// directory shaped like a git repository, and the gitdir (and its commondir)
// that a `.git` file names. Its one user is the policy service
// (sandboxpolicy.Service.ProtectedEntries and ProtectedAt), which both the
// command runner (binding each entry read-only for a command) and the file
// fence (refusing a mutation inside one) ask.
//
// The scan is built to be run on directories an adversary filled:
//
//   - It never follows a symlink. Every directory is opened relative to its
//     parent's descriptor with O_NOFOLLOW|O_DIRECTORY|O_NONBLOCK, or, when
//     the cache answers for it without opening it, lstat-ed relative to its
//     parent's descriptor (fstatat AT_SYMLINK_NOFOLLOW); the root is opened
//     once by its canonical path with openat2 RESOLVE_NO_SYMLINKS; a gitdir
//     is opened one component at a time the same way. A symlink is never
//     returned (a bind mount onto it would follow it).
//   - It never opens what could block: a `.git` or `commondir` file is read
//     (at most 4 KiB) only when fstat of its non-blocking open says it is a
//     regular file, and it is opened only when lstat said so first.
//   - Memory does not grow with a directory's size: directories are read with
//     getdents into one 32 KiB buffer, and nothing is allocated for an entry
//     that is neither a directory nor protected.
//   - It fails closed: a scan that runs out of entries or depth (*BudgetError),
//     out of time (the context's error) or into an unreadable directory
//     returns an error and no entries, never a partial list, so the command
//     is refused rather than run with a protected path left writable.
//   - In a Shared root (a temp area other users write to) only the entries of
//     Root.Owner count: another user's directories are not entered and their
//     entries are ignored, and only Owner's count against the budget, so what
//     another user plants there (a `.git -> /` symlink, a FIFO, a directory of
//     a million files) neither changes the result nor makes the scan fail.
//
// A Scanner caches each directory it read (by device, inode, path and owner
// rule, validated by mtime and ctime), so a later scan reads again only the
// directories that changed. Each other directory costs an open, an fstat and
// a close when it has a subdirectory or a `.git` file (its descriptor is
// needed to go on), else one lstat from its parent's descriptor, which must
// show a directory (of Owner, in a Shared root) of the cached identity and
// times. A directory modified within 2 s of its reading is always read again
// (an entry added in the same clock tick as the reading would leave its mtime
// unchanged).
//
// Kept current (issue 34): every directory a scan reads or revalidates is
// watched, before it is read, through one inotify instance the process
// shares (notify.go), within a budget of a quarter of the user's watches;
// the queued events are drained at the start of each scan. A scan of the
// same roots with the same Scanner whose directories saw no change that
// matters to it (memo.go: a directory made, removed or moved; a name the
// Match protects or a finding made, removed, moved or given another owner or
// mode; a repository marker; a `.git` file written) takes the last result
// instead of walking: its cost is the drain, proportional to what changed.
// An event is judged by what is at its path now, read once a drain however
// many scanners, kept results and events of that path there are
// (probe.go): a command's 36 placeholders, each made, marked, renamed and
// removed, cost each drain one lstat and one check of each path.
// A directory the walk entered that is removed or moved away matters only
// when something found lies in it; a root's own removal or move always
// does, and a root whose identity is not the one the result was read from
// (it, or a directory above it, replaced with no watched directory telling)
// is walked again, and so is every root set when the process's mount table
// (/proc/self/mountinfo) differs from the one the result was read with (a
// mount tells no watched directory). A placeholder file written in place is
// a protected file then, and its write matters. Options.Sockets finds socket
// files by their entry's type, with no Match. The gitdirs a `.git` file names
// are followed and split again at every scan.
// A runner's placeholder (placeholder.go: the mount point of a reserved,
// missing protected name, marked with a user extended attribute) is no
// finding, and its coming and going changes nothing. Where inotify is
// unavailable, the budget is spent, or a directory lies on a filesystem
// whose changes may come from elsewhere (a network or FUSE filesystem),
// nothing is reused: each scan is the cached walk above (Notifications says
// which, for `harness policy`).
//
// What it does not cover: entries created, or moved into place, during or
// after the scan (the caller verifies each entry's identity when it mounts it,
// and a directory that vanishes mid-scan is skipped); a tree larger than the
// budget (refused, not scanned); a gitdir reached through a symlink (never
// followed, so not found). Another user can still slow the scan of a Shared
// root by filling it with entries (each costs its getdents share, a directory
// one fstatat more), bounded by the filesystem's inode limits and by the
// caller's deadline.
package protectscan

// Package dirwatch tells whether any of a set of directories and files
// changed since it began watching them, from the kernel's inotify: in a
// directory, a name made, removed or moved in or out, an entry's owner, mode,
// link count or times changed (through that directory); a watched file's or
// directory's own owner, mode, link count or times changed through any path
// (another hard link, a bind mount's source), or it was removed or moved. It
// lets a result computed by walking directories be reused until one of them
// changes (issue 34: work per call proportional to what changed, not to the
// tree).
//
// Changed drains the queue synchronously: the kernel queues an event before
// the call that changed the directory returns, so a change completed before
// Changed is called is always reported. It does not see what inotify does
// not: changes of a network or FUSE filesystem made elsewhere (Add refuses
// such directories, see Local), a file's content, and mounts (a caller
// compares MountTable).
//
// It is Linux's: elsewhere New refuses (errors.ErrUnsupported) and a
// caller walks again each time.
package dirwatch

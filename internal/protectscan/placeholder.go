package protectscan

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A runner's placeholder (internal/subproc's reservation of a missing
// protected name, the mount point of a command's read-only view of it) is
// an empty directory of mode PlaceholderDirMode, or a file of mode
// PlaceholderFileMode holding one of placeholderContents, marked with the user
// extended attribute PlaceholderXattr set to "1"; or, for a `.git`
// (PlaceholderFIFOName), a named pipe of mode PlaceholderFIFOMode with one
// link (a pipe takes no user extended attribute: its type, name and mode
// are its mark; a pipe carries nothing git or anything else would run).
// It holds nothing, and a scan neither reports it nor is disturbed by its
// coming and going: the runner reserves it again for each command.
const (
	PlaceholderDirMode  = 0o555
	PlaceholderFileMode = 0o444
	PlaceholderXattr    = "user.harness.placeholder"
	PlaceholderFIFOMode = 0o400
	PlaceholderFIFOName = ".git"
	// PlaceholderTempPrefix begins the name a placeholder is made under,
	// beside its place, before it is renamed there.
	PlaceholderTempPrefix = ".harness-placeholder-"
)

// The contents of the file placeholders of a home's start-up files whose
// mere presence would change what a login shell on the host reads: each
// does what the shell does without the file (bash reads the first of
// .bash_profile, .bash_login and .profile; tcsh .tcshrc, else .cshrc), so
// a reserved, missing one does not shadow the user's real one while a
// command runs.
const (
	BashProfilePlaceholder = "# harness reserves this name while a sandboxed command runs; bash then reads what it would without it\n" +
		"if [ -f ~/.bash_login ]; then . ~/.bash_login; elif [ -f ~/.profile ]; then . ~/.profile; fi\n"
	BashLoginPlaceholder = "# harness reserves this name while a sandboxed command runs; bash then reads what it would without it\n" +
		"if [ -f ~/.profile ]; then . ~/.profile; fi\n"
	TcshrcPlaceholder = "# harness reserves this name while a sandboxed command runs; tcsh then reads what it would without it\n" +
		"if ( -f ~/.cshrc ) source ~/.cshrc\n"
)

// placeholderContents are the contents a file placeholder holds: none, a
// commondir's ".\n", or a start-up file's.
var placeholderContents = map[string]bool{"": true, ".\n": true, BashProfilePlaceholder: true, BashLoginPlaceholder: true, TcshrcPlaceholder: true}

// maxPlaceholderBytes bounds a file placeholder's content.
const maxPlaceholderBytes = 256

// placeholderIn reports whether name in dirfd (lstat st) is a marked
// placeholder. A file system without user extended attributes has none
// that a scan can tell apart: there every such entry is reported.
func placeholderIn(dirfd int, name string, st *unix.Stat_t) bool {
	if st.Mode == unix.S_IFIFO|PlaceholderFIFOMode {
		return name == PlaceholderFIFOName && st.Nlink == 1
	}
	if !placeholderShape(st) {
		return false
	}
	fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	return placeholderFD(fd)
}

// placeholderAt is placeholderIn for the absolute path p.
func placeholderAt(p string, st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT == unix.S_IFIFO {
		return placeholderIn(unix.AT_FDCWD, filepath.Base(p), st)
	}
	return placeholderIn(unix.AT_FDCWD, p, st)
}

// placeholderShape reports whether st has a placeholder's type, mode, size
// and links: a file of one name only (a second link could change it
// through a name no scan watches), a directory without subdirectories.
func placeholderShape(st *unix.Stat_t) bool {
	switch st.Mode {
	case unix.S_IFDIR | PlaceholderDirMode:
		return st.Nlink <= 2
	case unix.S_IFREG | PlaceholderFileMode:
		return st.Size <= maxPlaceholderBytes && st.Nlink == 1
	}
	return false
}

// placeholderFD reports whether the open fd still has a placeholder's
// shape, carries the mark, and, a directory, is empty, a file, holds one
// of placeholderContents.
func placeholderFD(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !placeholderShape(&st) {
		return false
	}
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(fd, PlaceholderXattr, buf)
	if err != nil || string(buf[:n]) != "1" {
		return false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		content := make([]byte, st.Size)
		n, err := unix.Pread(fd, content, 0)
		return err == nil && int64(n) == st.Size && placeholderContents[string(content)]
	}
	dents := make([]byte, 1024)
	for {
		k, err := getdents(fd, dents)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		if k <= 0 {
			return true
		}
		if _, _, names := unix.ParseDirent(dents[:k], -1, nil); len(names) > 0 {
			return false
		}
	}
}

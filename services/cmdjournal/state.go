package cmdjournal

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/journal"
)

// The entry types a walk records (journal.Node.Type).
const (
	fileType    = journal.File
	dirType     = journal.Dir
	symlinkType = journal.Symlink
)

// fromStat returns the state of an lstat; typ is "" for anything but a
// regular file, a directory or a symlink.
func fromStat(st *unix.Stat_t) *state {
	s := &state{
		mode: dirfd.Perm(st), uid: st.Uid, gid: st.Gid, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
		ino: st.Ino, dev: dirfd.Dev(st),
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		s.typ = fileType
	case unix.S_IFDIR:
		s.typ = dirType
		s.size = 0
	case unix.S_IFLNK:
		s.typ = symlinkType
	}
	return s
}

// node returns s as the journal's node at the absolute path p.
func (s *state) node(p string) journal.Node {
	n := journal.Node{Path: p, Type: s.typ, Mode: s.mode, UID: s.uid, GID: s.gid, MTime: s.mtime, Ino: s.ino, Dev: s.dev}
	switch s.typ {
	case fileType:
		n.Size, n.Hash = s.size, s.hash
	case symlinkType:
		n.Link = s.link
	}
	return n
}

// now is the wall clock in ns since the epoch.
func now() int64 { return time.Now().UnixNano() }

// dupCloexec duplicates fd, close-on-exec.
func dupCloexec(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

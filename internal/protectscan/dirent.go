package protectscan

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// direntBufBytes is the getdents buffer of a scan: about a thousand entries
// of a short name per system call, and all a scan holds of a directory that
// is neither cached nor protected.
const direntBufBytes = 32 << 10

// direntNameOff is where a linux_dirent64 record's name starts: d_ino (8),
// d_off (8), d_reclen (2), d_type (1).
const direntNameOff = 19

// dirent is one record parsed from a getdents buffer.
type dirent struct {
	ino  uint64
	typ  uint8  // unix.DT_*
	name []byte // aliases the buffer, without the terminating NUL
}

// nextDirent parses the first linux_dirent64 record of buf. It returns the
// record and the rest of buf; ok is false when buf is empty. A record whose
// length does not fit buf is an *os.PathError (EIO) naming path.
func nextDirent(buf []byte, path string) (d dirent, rest []byte, ok bool, err error) {
	if len(buf) == 0 {
		return d, nil, false, nil
	}
	if len(buf) < direntNameOff {
		return d, nil, false, &os.PathError{Op: "getdents", Path: path, Err: unix.EIO}
	}
	reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
	if reclen <= direntNameOff || reclen > len(buf) {
		return d, nil, false, &os.PathError{Op: "getdents", Path: path, Err: unix.EIO}
	}
	rec := buf[:reclen]
	name := rec[direntNameOff:]
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	d = dirent{ino: binary.NativeEndian.Uint64(rec[0:8]), typ: rec[18], name: name}
	return d, buf[reclen:], true, nil
}

// skipDirent reports whether a record is not an entry: "." and "..", and
// records of inode 0 (deleted entries on some filesystems).
func skipDirent(d *dirent) bool {
	n := d.name
	return d.ino == 0 || len(n) == 0 ||
		(n[0] == '.' && (len(n) == 1 || (len(n) == 2 && n[1] == '.')))
}

// direntType converts st's file type to a unix.DT_* value.
func direntType(st *unix.Stat_t) uint8 {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	}
	return unix.DT_UNKNOWN
}

package fsuser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// Access is a set of the permission bits a check asks for, as access(2)
// spells them.
type Access uint32

// The permission bits.
const (
	// Search is a directory's search permission (a file's execute).
	Search Access = 0o1
	// Write is the write permission.
	Write Access = 0o2
	// Read is the read permission.
	Read Access = 0o4
)

// Account is the user a permission check is for: its user id and every
// group id it holds (primary and supplementary), judged as a process
// without capabilities (uid 0 is the owner it is, never capable), as a
// confined command runs.
type Account struct {
	UID  uint32
	GIDs []uint32
}

// ErrACL marks May's failure to read or parse a file's access ACL (as
// opposed to the stat's failure, returned as is).
var ErrACL = errors.New("the access ACL cannot be read")

// aclXattr is the extended attribute holding a file's POSIX access ACL.
const aclXattr = "system.posix_acl_access"

// May reports whether the kernel grants a the access want on the file at
// path (its last component followed when follow), by the one rule of the
// kernel's generic_permission for a process without capabilities: the
// owner's bits for the owner; else, when the file has a POSIX access ACL
// whose mask (the mode's group bits) grants anything, its entries (a named user's, then the owning and named groups', each
// limited by the mask; other's when no group entry matched); else the
// group's bits for a member of the file's group, the others' bits for
// anyone else. It is the one answer to "could this user write or search
// this path" for the command runner and the denial inference (issue 37).
// Errors: the stat's, as is (the path is missing or cannot be reached from
// the server), or ErrACL (an ACL that cannot be read or parsed); the caller
// decides which way such a path counts.
func (a Account) May(path string, want Access, follow bool) (bool, error) {
	var st unix.Stat_t
	var err error
	if follow {
		err = unix.Stat(path, &st)
	} else {
		err = unix.Lstat(path, &st)
	}
	if err != nil {
		return false, err
	}
	acl, err := accessACL(path, follow, st.Mode&unix.S_IFMT == unix.S_IFLNK)
	if err == nil {
		var ok bool
		if ok, err = a.allows(&st, acl, want); err == nil {
			return ok, nil
		}
	}
	return false, fmt.Errorf("%w: %s: %w", ErrACL, path, err)
}

// accessACL returns the file's access ACL entries, none (nil) when it has
// none or its file system keeps no ACLs. A symlink (link, not followed)
// has none: EPERM reading its attributes says so, and nothing else.
func accessACL(path string, follow, link bool) ([]byte, error) {
	get := unix.Getxattr
	if !follow {
		get = unix.Lgetxattr
	}
	buf := make([]byte, 4+8*16)
	for {
		n, err := get(path, aclXattr, buf)
		switch {
		case err == nil:
			return buf[:n], nil
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EPERM) && link:
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < 1<<16:
			buf = make([]byte, 2*len(buf))
		default:
			return nil, err
		}
	}
}

// ACL entry tags (linux/posix_acl_xattr.h, include/uapi/linux/posix_acl.h)
// and the xattr format's version.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
	aclVersion  = 2
)

// allows decides want for a on a file of stat st with the access ACL acl
// (the raw xattr, nil for none), as posix_acl_permission and
// acl_permission_check do. Errors: a malformed ACL.
func (a Account) allows(st *unix.Stat_t, acl []byte, want Access) (bool, error) {
	mode := Access(st.Mode)
	if st.Uid == a.UID {
		return mode>>6&want == want, nil
	}
	if acl == nil || mode&0o070 == 0 {
		// Without an ACL, or with a mask of nothing (the group bits), the
		// kernel reads the mode bits alone.
		if slices.Contains(a.GIDs, st.Gid) {
			return mode>>3&want == want, nil
		}
		return mode&want == want, nil
	}
	if len(acl) < 4 || (len(acl)-4)%8 != 0 || binary.LittleEndian.Uint32(acl) != aclVersion {
		return false, errors.New("a malformed access ACL")
	}
	type entry struct {
		tag  uint16
		perm Access
		id   uint32
	}
	entries := make([]entry, 0, (len(acl)-4)/8)
	mask, hasMask := Access(0o7), false
	for b := acl[4:]; len(b) > 0; b = b[8:] {
		e := entry{tag: binary.LittleEndian.Uint16(b), perm: Access(binary.LittleEndian.Uint16(b[2:])), id: binary.LittleEndian.Uint32(b[4:])}
		if e.tag == aclMask {
			mask, hasMask = e.perm, true
		}
		entries = append(entries, e)
	}
	masked := func(p Access) bool {
		if hasMask {
			p &= mask
		}
		return p&want == want
	}
	found := false
	for _, e := range entries {
		switch e.tag {
		case aclUser:
			if e.id == a.UID {
				return masked(e.perm), nil
			}
		case aclGroupObj:
			if slices.Contains(a.GIDs, st.Gid) {
				found = true
				if masked(e.perm) {
					return true, nil
				}
			}
		case aclGroup:
			if slices.Contains(a.GIDs, e.id) {
				found = true
				if masked(e.perm) {
					return true, nil
				}
			}
		case aclOther:
			if found {
				return false, nil
			}
			return e.perm&want == want, nil
		}
	}
	return false, errors.New("an access ACL without an entry for others")
}

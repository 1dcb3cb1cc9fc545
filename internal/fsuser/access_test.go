package fsuser_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/fsuser"
)

// Shorter names for the tables below.
type aclEntry = fixture.ACLEntry

// ent is one ACL entry: tag, permissions, id.
func ent(tag, perm uint16, id uint32) aclEntry { return aclEntry{Tag: tag, Perm: perm, ID: id} }

const (
	userObj     = fixture.ACLUserObj
	user        = fixture.ACLUser
	groupObj    = fixture.ACLGroupObj
	group       = fixture.ACLGroup
	mask        = fixture.ACLMask
	other       = fixture.ACLOther
	undefinedID = fixture.ACLNoID
)

// accessCase is one file (owner 1000, group 1000, mode, access ACL) and
// the answers for the accounts asked.
type accessCase struct {
	name string
	mode uint32
	acl  []aclEntry // nil: none
	// want is each account's expected answer for Search and Write.
	want []accessWant
}

type accessWant struct {
	account       fsuser.Account
	search, write bool
}

var (
	owner    = fsuser.Account{UID: 1000, GIDs: []uint32{1000}}
	member   = fsuser.Account{UID: 2000, GIDs: []uint32{1000}}
	named    = fsuser.Account{UID: 3000, GIDs: []uint32{3000}}
	inGroup6 = fsuser.Account{UID: 4000, GIDs: []uint32{6000}}
	stranger = fsuser.Account{UID: 5000, GIDs: []uint32{5000}}
	rootAcct = fsuser.Account{UID: 0, GIDs: []uint32{0}}
)

var accessCases = []accessCase{
	{name: "mode bits: owner, group, others", mode: 0o751, want: []accessWant{
		{owner, true, true}, {member, true, false}, {stranger, true, false}, {rootAcct, true, false},
	}},
	{name: "mode 0700: root without capabilities is a stranger", mode: 0o700, want: []accessWant{
		{owner, true, true}, {member, false, false}, {rootAcct, false, false},
	}},
	{name: "a named user's entry, limited by the mask", mode: 0o750, acl: []aclEntry{
		ent(userObj, 7, undefinedID), ent(user, 7, 3000), ent(groupObj, 5, undefinedID), ent(mask, 5, undefinedID), ent(other, 0, undefinedID),
	}, want: []accessWant{
		{named, true, false}, {member, true, false}, {stranger, false, false}, {owner, true, true},
	}},
	{name: "a named group's entry", mode: 0o770, acl: []aclEntry{
		ent(userObj, 7, undefinedID), ent(groupObj, 0, undefinedID), ent(group, 7, 6000), ent(mask, 7, undefinedID), ent(other, 0, undefinedID),
	}, want: []accessWant{
		{inGroup6, true, true}, {member, false, false}, {stranger, false, false},
	}},
	{name: "a matching group entry that grants nothing wins over others", mode: 0o775, acl: []aclEntry{
		ent(userObj, 7, undefinedID), ent(groupObj, 0, undefinedID), ent(group, 0, 6000), ent(mask, 7, undefinedID), ent(other, 5, undefinedID),
	}, want: []accessWant{
		{member, false, false}, {inGroup6, false, false}, {stranger, true, false},
	}},
	// chmod g-rwx on a file with an ACL sets its mask to nothing: the
	// kernel then reads the mode bits alone, the named user getting the
	// others' bits.
	{name: "a mask of nothing: the mode bits alone", mode: 0o705, acl: []aclEntry{
		ent(userObj, 7, undefinedID), ent(user, 7, 3000), ent(groupObj, 7, undefinedID), ent(mask, 0, undefinedID), ent(other, 5, undefinedID),
	}, want: []accessWant{
		{named, true, false}, {member, false, false}, {stranger, true, false},
	}},
}

// TestMay decides each case on a real file (a directory of that mode and
// ACL, owned by 1000:1000) and, as root, asks the kernel the same question
// under each account's filesystem identity (faccessat with AT_EACCESS), so
// the rule is the kernel's, not a copy of it. Root only: it chowns and sets
// ACLs naming other users.
func TestMay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowning the fixtures to other users needs root")
	}
	base := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755)) // t.TempDir makes both 0700: let every account through
	require.NoError(t, os.Chmod(base, 0o755))
	for i, c := range accessCases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(base, fmt.Sprint(i))
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chown(dir, 1000, 1000))
			if c.acl != nil {
				fixture.ACL(t, dir, c.acl...)
			}
			require.NoError(t, unix.Chmod(dir, c.mode))
			for _, w := range c.want {
				for _, q := range []struct {
					access fsuser.Access
					want   bool
				}{{fsuser.Search, w.search}, {fsuser.Write, w.write}} {
					got, err := w.account.May(dir, q.access, true)
					require.NoError(t, err)
					assert.Equal(t, q.want, got, "uid %d, access %o", w.account.UID, q.access)
					u := fsuser.User{UID: int(w.account.UID), GID: int(w.account.GIDs[0])}
					kernel := u.Do(func() error { return unix.Faccessat(unix.AT_FDCWD, dir, uint32(q.access), unix.AT_EACCESS) }) == nil
					if w.account.UID != 0 { // root's fs identity keeps its capabilities
						assert.Equal(t, kernel, got, "the kernel's answer for uid %d, access %o", w.account.UID, q.access)
					}
				}
			}
		})
	}
}

// TestMayErrors: a missing path is the stat's error; a symlink not followed
// is decided by its own mode (0777, owned by whoever made it).
func TestMayErrors(t *testing.T) {
	dir := t.TempDir()
	me := fsuser.Account{UID: uint32(os.Geteuid()), GIDs: []uint32{uint32(os.Getegid())}}
	_, err := me.May(filepath.Join(dir, "missing"), fsuser.Search, true)
	require.ErrorIs(t, err, unix.ENOENT)
	require.NoError(t, os.Symlink("missing", filepath.Join(dir, "link")))
	ok, err := me.May(filepath.Join(dir, "link"), fsuser.Write, false)
	require.NoError(t, err)
	assert.True(t, ok)
	_, err = me.May(filepath.Join(dir, "link"), fsuser.Write, true)
	require.ErrorIs(t, err, unix.ENOENT)
}

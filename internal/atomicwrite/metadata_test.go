//go:build linux

package atomicwrite

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// acl encodes a POSIX ACL as the kernel stores it in system.posix_acl_*:
// version 2, then (tag, perm, id) entries. Ids of the *_OBJ, MASK and OTHER
// entries are unused.
func acl(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// ACL tags (linux/posix_acl_xattr.h) and the unused id.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
)

// userACL grants user 1001 read, with a mask of read: the group bits of the
// file's mode show the mask (r--).
var userACL = acl(
	[3]uint32{aclUserObj, 6, aclNoID},
	[3]uint32{aclUser, 4, 1001},
	[3]uint32{aclGroupObj, 4, aclNoID},
	[3]uint32{aclMask, 4, aclNoID},
	[3]uint32{aclOther, 0, aclNoID},
)

func getxattr(t *testing.T, path, name string) []byte {
	t.Helper()
	b := make([]byte, 4096)
	n, err := unix.Lgetxattr(path, name, b)
	if err != nil {
		return nil
	}
	return b[:n]
}

func ownerOf(t *testing.T, path string) (uint32, uint32) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(path, &st))
	return st.Uid, st.Gid
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a file another owner needs root; the non-root cases run in services/fslocal through a helper process")
	}
}

// Issue 13 item 1, spec difference 9: a replaced file keeps its owner and
// group, its mode, its extended attributes and its access ACL; an ACL the new
// file inherited from the directory's default ACL, which the old file did
// not have, is not added.
func TestWrite_ReplaceKeepsMetadata(t *testing.T) {
	requireRoot(t)
	forEachParent(t, []string{"a.txt: old\n", "plain.txt: old\n"}, func(t *testing.T, e env) {
		require.NoError(t, os.Chown(e.target(), 1000, 1000))
		require.NoError(t, unix.Setxattr(e.target(), "user.origin", []byte("kept"), 0))
		require.NoError(t, unix.Setxattr(e.target(), "system.posix_acl_access", userACL, 0))
		require.NoError(t, os.Chmod(e.target(), 0o640))
		plain := filepath.Join(e.dir, "plain.txt")
		require.NoError(t, os.Chmod(plain, 0o604))
		// The directory's default ACL would give a new file an access ACL.
		require.NoError(t, unix.Setxattr(e.dir, "system.posix_acl_default", userACL, 0))

		for _, name := range []string{"a.txt", "plain.txt"} {
			res, err := Write(context.Background(), Request{Parent: e.p, Name: name, Content: "new\n", Publication: Replace, noUnnamed: e.staged})
			require.NoError(t, err)
			assert.Equal(t, NotInPlace, res.InPlace, "published atomically")
		}
		assertFile(t, e.target(), "new\n", 0o640)
		uid, gid := ownerOf(t, e.target())
		assert.Equal(t, [2]uint32{1000, 1000}, [2]uint32{uid, gid}, "owner and group kept")
		assert.Equal(t, "kept", string(getxattr(t, e.target(), "user.origin")), "extended attribute kept")
		assert.Equal(t, userACL, getxattr(t, e.target(), "system.posix_acl_access"), "access ACL kept")

		assertFile(t, plain, "new\n", 0o604)
		uid, gid = ownerOf(t, plain)
		assert.Equal(t, [2]uint32{0, 0}, [2]uint32{uid, gid})
		assert.Nil(t, getxattr(t, plain, "system.posix_acl_access"), "no ACL inherited onto a file that had none")
		noResidue(t, e)
	})
}

// Spec difference 9: a new file takes Request.Owner when set (a root
// server writing in another user's workspace).
func TestWrite_NewFileTakesOwner(t *testing.T) {
	requireRoot(t)
	for _, pb := range publications {
		t.Run(pb.name, func(t *testing.T) {
			forEachParent(t, nil, func(t *testing.T, e env) {
				_, err := Write(context.Background(), Request{
					Parent: e.p, Name: "a.txt", Content: "x", Publication: pb.pub, noUnnamed: e.staged,
					Owner: &Owner{UID: 1000, GID: 1000},
				})
				require.NoError(t, err)
				assertFile(t, e.target(), "x", newPerm)
				uid, gid := ownerOf(t, e.target())
				assert.Equal(t, [2]uint32{1000, 1000}, [2]uint32{uid, gid})
				noResidue(t, e)
			})
		})
	}
}

// Issue 13 item 2: a file with no write bit is not replaced, even by root.
func TestWrite_ReadOnlyTargetIsDenied(t *testing.T) {
	forEachParent(t, []string{"a.txt: original\n"}, func(t *testing.T, e env) {
		require.NoError(t, os.Chmod(e.target(), 0o444))
		before, err := os.Lstat(e.target())
		require.NoError(t, err)
		_, err = Write(context.Background(), Request{Parent: e.p, Name: "a.txt", Content: "changed\n", Publication: Replace, noUnnamed: e.staged})
		var de *DeniedError
		require.ErrorAs(t, err, &de)
		assert.Empty(t, de.Dir, "the file is the cause")
		assert.ErrorIs(t, err, unix.EACCES)
		assertFile(t, e.target(), "original\n", 0o444)
		after, err := os.Lstat(e.target())
		require.NoError(t, err)
		assert.True(t, os.SameFile(before, after), "the same file")
		noResidue(t, e)
	})
}

// Issue 13 item 3: where the directory refuses publication (EACCES) but the
// file is writable with one link, the file is rewritten in place and the
// result says so; otherwise the error names the directory.
func TestWrite_DirectoryRefusesPublication(t *testing.T) {
	refuse := func(int, string, int, string, int) error { return unix.EACCES }
	t.Run("a writable file is rewritten in place", func(t *testing.T) {
		forEachKind(t, false, []string{"a.txt: a longer original text\n"}, func(t *testing.T, e env) {
			require.NoError(t, os.Chmod(e.target(), 0o640))
			before, err := os.Lstat(e.target())
			require.NoError(t, err)
			res, err := Write(context.Background(), Request{Parent: e.p, Name: "a.txt", Content: "short\n", Publication: Replace, link: refuse})
			require.NoError(t, err)
			assert.Equal(t, InPlaceDirDenied, res.InPlace)
			assert.NotEmpty(t, res.InPlace.String())
			assertFile(t, e.target(), "short\n", 0o640)
			after, err := os.Lstat(e.target())
			require.NoError(t, err)
			assert.True(t, os.SameFile(before, after), "the same inode, rewritten")
			assertFreshStat(t, res.Stat, e.target())
			noResidue(t, e)
		})
	})
	t.Run("a file with two links is not rewritten; the directory is named", func(t *testing.T) {
		forEachKind(t, false, []string{"a.txt: original\n"}, func(t *testing.T, e env) {
			require.NoError(t, os.Link(e.target(), filepath.Join(e.dir, "b.txt")))
			_, err := Write(context.Background(), Request{Parent: e.p, Name: "a.txt", Content: "changed\n", Publication: Replace, link: refuse})
			var de *DeniedError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, e.dir, de.Dir)
			assert.Contains(t, de.Error(), e.dir)
			assertFile(t, e.target(), "original\n", 0o644)
			noResidue(t, e)
		})
	})
	t.Run("a new file is refused; the directory is named", func(t *testing.T) {
		for _, pb := range publications {
			forEachKind(t, false, nil, func(t *testing.T, e env) {
				_, err := Write(context.Background(), Request{Parent: e.p, Name: "a.txt", Content: "x", Publication: pb.pub, link: refuse})
				var de *DeniedError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, e.dir, de.Dir)
				assertAbsent(t, e.target())
				noResidue(t, e)
			})
		}
	})
}

// A guarded create whose link is refused with EACCES while a file is there
// is a collision, not a refusal by the directory.
func TestWrite_CollisionWinsOverDirectoryRefusal(t *testing.T) {
	forEachKind(t, false, []string{"a.txt: there\n"}, func(t *testing.T, e env) {
		_, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "x", Publication: CreateOnly,
			link: func(int, string, int, string, int) error { return unix.EACCES },
		})
		var ce *CollisionError
		require.ErrorAs(t, err, &ce)
		assert.True(t, ce.Regular)
		assertFile(t, e.target(), "there\n", 0o644)
		noResidue(t, e)
	})
}

//go:build linux

package protectscan

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestListingFresh(t *testing.T) {
	const readAt = int64(1_000_000_000_000)
	const old = readAt - 10*racyWindowNanos
	stat := func(mtime, ctime int64) *unix.Stat_t {
		return &unix.Stat_t{Mtim: unix.NsecToTimespec(mtime), Ctim: unix.NsecToTimespec(ctime)}
	}
	cases := []struct {
		name         string
		mtime, ctime int64 // cached
		now          *unix.Stat_t
		want         bool
	}{
		{"unchanged and old", old, old, stat(old, old), true},
		{"mtime moved", old, old, stat(old+1, old), false},
		{"ctime moved", old, old, stat(old, old+1), false},
		{"modified in the reading's tick", readAt, readAt, stat(readAt, readAt), false},
		{"modified 1 s before the reading", readAt - 1e9, old, stat(readAt-1e9, old), false},
		{"modified exactly 2 s before the reading", readAt - racyWindowNanos, old, stat(readAt-racyWindowNanos, old), false},
		{"modified just over 2 s before the reading", readAt - racyWindowNanos - 1, old, stat(readAt-racyWindowNanos-1, old), true},
		{"modified after the reading (a clock step)", readAt + 5e9, old, stat(readAt+5e9, old), false},
		{"an old mtime, a recent ctime", old, readAt, stat(old, readAt), true},
	}
	for _, tc := range cases {
		l := &listing{mtime: tc.mtime, ctime: tc.ctime, readAt: readAt}
		assert.Equal(t, tc.want, l.fresh(tc.now), tc.name)
	}
}

func TestDirCache_Bounds(t *testing.T) {
	t.Run("full: what the current scan has not used is dropped", func(t *testing.T) {
		c := newDirCache()
		for i := range cacheMaxDirs {
			c.put(dirKey{ino: uint64(i)}, &listing{subdirs: []subdir{{name: "d"}}}, 1)
		}
		require.Equal(t, cacheMaxDirs, c.len())
		require.Equal(t, cacheMaxDirs, c.names)
		st := &unix.Stat_t{}
		_, ok := c.get(dirKey{ino: 7}, st, 2) // fresh: zero times, readAt far ahead
		require.False(t, ok, "readAt 0: racy")
		c.put(dirKey{ino: 7}, &listing{readAt: 10 * racyWindowNanos}, 2)
		c.put(dirKey{ino: uint64(cacheMaxDirs)}, &listing{}, 2)
		assert.Equal(t, 2, c.len())
		assert.Equal(t, 0, c.names)
		_, ok = c.get(dirKey{ino: 7}, st, 3)
		assert.True(t, ok)
	})
	t.Run("full of the current scan: everything is dropped", func(t *testing.T) {
		c := newDirCache()
		for i := range cacheMaxDirs + 1 {
			c.put(dirKey{ino: uint64(i)}, &listing{}, 1)
		}
		assert.Equal(t, 1, c.len())
	})
	t.Run("names are bounded", func(t *testing.T) {
		c := newDirCache()
		big := make([]subdir, cacheMaxNames/4+1)
		c.put(dirKey{ino: 1}, &listing{subdirs: big}, 1)
		assert.Zero(t, c.len(), "a directory of over a quarter of the names is not cached")
		quarter := make([]subdir, cacheMaxNames/4)
		for i := range 5 {
			c.put(dirKey{ino: uint64(i)}, &listing{subdirs: quarter}, 1)
		}
		assert.LessOrEqual(t, c.names, cacheMaxNames)
		assert.Equal(t, 1, c.len())
	})
	t.Run("a directory read again replaces its listing", func(t *testing.T) {
		c := newDirCache()
		c.put(dirKey{ino: 1}, &listing{subdirs: []subdir{{name: "a"}, {name: "b"}}}, 1)
		c.put(dirKey{ino: 1}, &listing{subdirs: []subdir{{name: "a"}}}, 2)
		assert.Equal(t, 1, c.len())
		assert.Equal(t, 1, c.names)
	})
}

// record encodes one linux_dirent64 record of name, padded to 8 bytes.
func record(ino uint64, typ uint8, name string) []byte {
	n := (direntNameOff + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b[0:8], ino)
	binary.NativeEndian.PutUint16(b[16:18], uint16(n))
	b[18] = typ
	copy(b[direntNameOff:], name)
	return b
}

func TestNextDirent(t *testing.T) {
	buf := append(append(record(5, unix.DT_DIR, ".git"), record(0, unix.DT_REG, "gone")...),
		record(6, unix.DT_REG, "..")...)
	d, rest, ok, err := nextDirent(buf, "/d")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, dirent{ino: 5, typ: unix.DT_DIR, name: []byte(".git")}, d)
	assert.False(t, skipDirent(&d))
	d, rest, ok, err = nextDirent(rest, "/d")
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, skipDirent(&d), "inode 0")
	d, rest, ok, err = nextDirent(rest, "/d")
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, skipDirent(&d), "..")
	_, _, ok, err = nextDirent(rest, "/d")
	require.NoError(t, err)
	assert.False(t, ok)

	for _, bad := range [][]byte{
		record(1, 0, "x")[:10],                        // shorter than a header
		append(record(1, 0, "x")[:16], 0xff, 0, 0, 0), // length past the buffer
		append(record(1, 0, "x")[:16], 3, 0, 0, 0),    // length inside the header
	} {
		_, _, _, err := nextDirent(bad, "/d")
		require.ErrorIs(t, err, unix.EIO)
		assert.Contains(t, err.Error(), "/d")
	}
}

//go:build linux

package dirfd_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// A File from OpenRead reads like an *os.File: sequential reads end in
// io.EOF, ReadAt reads at an offset without moving the file's offset and
// says io.EOF when it comes up short, and a second Close is os.ErrClosed.
func TestFileReads(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("hello, world"), 0o600))
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer d.Close() //nolint:errcheck // test handle
	f, st, err := d.OpenRead("f.txt")
	require.NoError(t, err)
	assert.True(t, dirfd.IsRegular(&st))
	assert.Equal(t, int64(12), st.Size)
	assert.Equal(t, filepath.Join(root, "f.txt"), f.Name())

	at := make([]byte, 5)
	n, err := f.ReadAt(at, 7)
	require.NoError(t, err)
	assert.Equal(t, "world", string(at[:n]))
	n, err = f.ReadAt(at, 10)
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, err, io.EOF)

	all, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, "hello, world", string(all), "ReadAt left the offset at 0")
	n, err = f.Read(make([]byte, 4))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF)

	require.NoError(t, f.Close())
	assert.Equal(t, -1, f.Fd())
	assert.ErrorIs(t, f.Close(), os.ErrClosed)
	_, err = f.Read(make([]byte, 1))
	var pe *os.PathError
	assert.True(t, errors.As(err, &pe), "a read after Close is an *os.PathError: %v", err)
}

// A Parent's Identity is its directory's device and inode, read once and
// still right after the directory is renamed.
func TestParentIdentity(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer d.Close() //nolint:errcheck // test handle
	p, _, err := d.OpenParent("d", false)
	require.NoError(t, err)
	defer p.Close() //nolint:errcheck // test handle
	var st unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Join(root, "d"), &st))
	id, err := p.Identity()
	require.NoError(t, err)
	assert.Equal(t, [2]uint64{st.Dev, st.Ino}, id)
	require.NoError(t, os.Rename(filepath.Join(root, "d"), filepath.Join(root, "e")))
	again, err := p.Identity()
	require.NoError(t, err)
	assert.Equal(t, id, again)
}

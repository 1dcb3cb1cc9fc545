//go:build linux

package dirfd_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// TestXattrs: the one reading of extended attributes the fence, the
// runner's root attributes, undo and the atomic write share: a list and a
// value larger than the first buffer (256 bytes) are read whole, a missing
// attribute is ENODATA, and Xattrs records them all, through a descriptor
// and through XattrsAt.
func TestXattrs(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "harness-xattr-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	if err := unix.Setxattr(p, "user.probe", []byte("1"), 0); errors.Is(err, unix.ENOTSUP) {
		t.Skip("no user extended attributes on /var/tmp here")
	}
	require.NoError(t, unix.Removexattr(p, "user.probe"))
	want := map[string][]byte{}
	for i := range 20 {
		name := fmt.Sprintf("user.attribute-with-a-long-name-%02d", i)
		want[name] = []byte{byte(i)}
	}
	big := bytes.Repeat([]byte("0123456789"), 150)
	want["user.big"] = big
	for name, v := range want {
		require.NoError(t, unix.Setxattr(p, name, v, 0))
	}
	f, err := os.Open(p)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	fd := int(f.Fd())

	names, err := dirfd.ListXattrs(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) })
	require.NoError(t, err)
	slices.Sort(names)
	wantNames := make([]string, 0, len(want))
	for name := range want {
		wantNames = append(wantNames, name)
	}
	slices.Sort(wantNames)
	assert.Equal(t, wantNames, names, "the whole list, past the first buffer")
	v, err := dirfd.GetXattr(func(b []byte) (int, error) { return unix.Fgetxattr(fd, "user.big", b) })
	require.NoError(t, err)
	assert.Equal(t, big, v, "the whole value, past the first buffer")
	_, err = dirfd.GetXattr(func(b []byte) (int, error) { return unix.Fgetxattr(fd, "user.none", b) })
	assert.ErrorIs(t, err, unix.ENODATA)

	assert.Equal(t, want, dirfd.Xattrs(fd))
	d, err := os.Open(dir)
	require.NoError(t, err)
	defer func() { _ = d.Close() }()
	assert.Equal(t, want, dirfd.XattrsAt(int(d.Fd()), "f"))
}

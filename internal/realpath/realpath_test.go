package realpath_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/realpath"
)

func TestOf(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.Symlink("real", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))

	got, err := realpath.Of(filepath.Join(dir, "link"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "real"), got)

	_, err = realpath.Of(filepath.Join(dir, "loop"))
	assert.ErrorIs(t, err, unix.ELOOP)

	_, err = realpath.Of(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, unix.ENOENT)

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close() //nolint:errcheck // test cleanup
	defer w.Close() //nolint:errcheck // test cleanup
	_, err = realpath.Of("/proc/self/fd/" + strconv.Itoa(int(r.Fd())))
	assert.ErrorIs(t, err, unix.ENOENT, "an anonymous pipe has no path: never a relative answer")
}

func TestCanonical(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Symlink(dir, filepath.Join(dir, "self")))
	got, err := realpath.Canonical(filepath.Join(dir, "self", "missing", "child.txt"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "missing", "child.txt"), got, "deepest existing ancestor plus the missing suffix")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644))
	_, err = realpath.Canonical(filepath.Join(dir, "afile", "child.txt"))
	assert.ErrorIs(t, err, unix.ENOTDIR)
}

// TestOfWhileTheFileIsReplaced: a file replaced by rename again and again
// (as atomic writers do) still resolves to its path, never to the kernel's
// "<path> (deleted)" name of a replaced inode.
func TestOfWhileTheFileIsReplaced(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	p := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmp := filepath.Join(dir, "a.tmp")
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.WriteFile(tmp, []byte("y"), 0o644)
			_ = os.Rename(tmp, p)
		}
	}()
	for range 20000 {
		got, err := realpath.Of(p)
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	close(stop)
	<-done
}

//go:build linux

package landlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/landlock"
)

// noNewPrivs reads the calling thread's no_new_privs bit.
func noNewPrivs(t testing.TB) bool {
	t.Helper()
	v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	require.NoError(t, err)
	return v == 1
}

// TestRunConfinesOnlyItsThread: inside Run a write beneath the root lands and
// a write outside it is refused with EACCES, while unrestricted goroutines,
// running at the same time, write outside freely.
func TestRunConfinesOnlyItsThread(t *testing.T) {
	d := dirs(t, "root", "outside")
	root, outside := d[0], d[1]
	ex := newExecutor(t, landlock.Config{})

	inside := make(chan struct{})
	release := make(chan struct{})
	var (
		insideErr, outsideErr error
		nnp                   bool
	)
	runErr := make(chan error, 1)
	go func() {
		runErr <- ex.Run(context.Background(), []string{root}, func() error {
			nnp = noNewPrivs(t)
			insideErr = create(root, "allowed", "inside")
			outsideErr = create(outside, "denied", "escaped")
			close(inside)
			<-release // hold the restricted thread while others write
			return nil
		})
	}()
	<-inside

	// While the restricted thread is busy, goroutines on every other thread
	// write outside the root.
	const writers = 32
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = create(outside, fmt.Sprintf("free-%d", i), "free") })
	}
	wg.Wait()
	close(release)
	require.NoError(t, <-runErr)

	assert.True(t, nnp, "the restricted thread has no_new_privs")
	assert.False(t, noNewPrivs(t), "the test goroutine's thread does not")
	require.NoError(t, insideErr)
	require.ErrorIs(t, outsideErr, unix.EACCES)
	assert.Equal(t, "inside", readText(t, filepath.Join(root, "allowed")))
	assert.Equal(t, "<missing>", readText(t, filepath.Join(outside, "denied")))
	for i, err := range errs {
		require.NoError(t, err, "unrestricted writer %d", i)
		assert.Equal(t, "free", readText(t, filepath.Join(outside, fmt.Sprintf("free-%d", i))))
	}

	// Reads stay unrestricted.
	require.NoError(t, ex.Run(context.Background(), []string{root}, func() error {
		b, err := os.ReadFile(filepath.Join(outside, "free-0"))
		if err == nil && string(b) != "free" {
			err = fmt.Errorf("read %q", b)
		}
		return err
	}))
}

// moveOp is one mutation addressed through descriptors: dir is the directory
// under test ("d"), root the root's own descriptor.
type moveOp struct {
	name string
	// crossDir: a link or rename between directories, which Landlock may
	// refuse with EXDEV instead of EACCES.
	crossDir bool
	// device: mknod of a device, which a container may forbid (EPERM).
	device bool
	do     func(dir, root int) error
	// landed reports whether the mutation took effect, given where "d" is
	// now and the root's path.
	landed func(t *testing.T, d, root string) bool
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func fileType(p string) uint32 {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return 0
	}
	return st.Mode & unix.S_IFMT
}

func mknodOp(name string, mode uint32, dev int, device bool) moveOp {
	return moveOp{
		name: "make a " + name, device: device,
		do:     func(dir, _ int) error { return unix.Mknodat(dir, "node", mode|0o600, dev) },
		landed: func(_ *testing.T, d, _ string) bool { return fileType(filepath.Join(d, "node")) == mode },
	}
}

// moveOps is every write-ish access the domain handles, each addressed
// through a descriptor of the directory under test.
var moveOps = []moveOp{
	{
		name: "create a file",
		do: func(dir, _ int) error {
			fd, err := unix.Openat(dir, "new", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			defer unix.Close(fd) //nolint:errcheck // the write's error is the result
			_, err = unix.Write(fd, []byte("new"))
			return err
		},
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "new")) == "new" },
	},
	{
		name: "write an existing file",
		do: func(dir, _ int) error {
			fd, err := unix.Openat(dir, "f", unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd) //nolint:errcheck // the write's error is the result
			_, err = unix.Write(fd, []byte("NEW"))
			return err
		},
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "f")) == "NEW" },
	},
	{
		name: "truncate through a read-only open",
		do: func(dir, _ int) error {
			fd, err := unix.Openat(dir, "f", unix.O_RDONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
			if err == nil {
				_ = unix.Close(fd)
			}
			return err
		},
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "f")) == "" },
	},
	{
		name: "publish an O_TMPFILE",
		do: func(dir, _ int) error {
			fd, err := unix.Openat(dir, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			defer unix.Close(fd) //nolint:errcheck // the link's error is the result
			if _, err := unix.Write(fd, []byte("tmp")); err != nil {
				return err
			}
			return unix.Linkat(fd, "", dir, "tmp", unix.AT_EMPTY_PATH)
		},
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "tmp")) == "tmp" },
	},
	{
		name:   "make a directory",
		do:     func(dir, _ int) error { return unix.Mkdirat(dir, "nd", 0o755) },
		landed: func(_ *testing.T, d, _ string) bool { return fileType(filepath.Join(d, "nd")) == unix.S_IFDIR },
	},
	{
		name:   "make a symlink",
		do:     func(dir, _ int) error { return unix.Symlinkat("f", dir, "ln") },
		landed: func(_ *testing.T, d, _ string) bool { return fileType(filepath.Join(d, "ln")) == unix.S_IFLNK },
	},
	mknodOp("FIFO", unix.S_IFIFO, 0, false),
	mknodOp("socket", unix.S_IFSOCK, 0, false),
	mknodOp("character device", unix.S_IFCHR, int(unix.Mkdev(1, 3)), true),
	mknodOp("block device", unix.S_IFBLK, int(unix.Mkdev(7, 0)), true),
	{
		name:   "remove a file",
		do:     func(dir, _ int) error { return unix.Unlinkat(dir, "f", 0) },
		landed: func(_ *testing.T, d, _ string) bool { return !exists(filepath.Join(d, "f")) },
	},
	{
		name:   "remove a directory",
		do:     func(dir, _ int) error { return unix.Unlinkat(dir, "sub", unix.AT_REMOVEDIR) },
		landed: func(_ *testing.T, d, _ string) bool { return !exists(filepath.Join(d, "sub")) },
	},
	{
		name: "rename a file into it", crossDir: true,
		do:     func(dir, root int) error { return unix.Renameat(root, "src", dir, "src") },
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "src")) == "src" },
	},
	{
		name: "link a file into it", crossDir: true,
		do:     func(dir, root int) error { return unix.Linkat(root, "src", dir, "lnk", 0) },
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "lnk")) == "src" },
	},
	{
		name: "rename a file out of it", crossDir: true,
		do:     func(dir, root int) error { return unix.Renameat(dir, "f", root, "f") },
		landed: func(t *testing.T, _, root string) bool { return readText(t, filepath.Join(root, "f")) == "old" },
	},
	{
		name: "exchange a file with one in it", crossDir: true,
		do: func(dir, root int) error {
			return unix.Renameat2(root, "src", dir, "f", unix.RENAME_EXCHANGE)
		},
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "f")) == "src" },
	},
	{
		name:   "rename within it",
		do:     func(dir, _ int) error { return unix.Renameat(dir, "f", dir, "g") },
		landed: func(t *testing.T, d, _ string) bool { return readText(t, filepath.Join(d, "g")) == "old" },
	},
}

// moveTree is the fixture of every moveOps case, beneath base.
var moveTree = []string{"root/d/f: old", "root/d/sub/", "root/src: src", "outside/"}

// openDirs opens root/d and root for *at calls.
func openDirs(root string) (d, r int, err error) {
	if d, err = unix.Open(filepath.Join(root, "d"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return -1, -1, err
	}
	if r, err = unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		_ = unix.Close(d)
		return -1, -1, err
	}
	return d, r, nil
}

// TestMovedOutDirectory runs every mutation through a descriptor of root/d in
// three ways: restricted with d inside the root (it lands); restricted with d
// renamed out of the root after the descriptor was opened, mid-call (the
// kernel refuses it and nothing changes on disk); unrestricted with d moved
// out (it lands outside: the refusal is the domain's, not the filesystem's).
func TestMovedOutDirectory(t *testing.T) {
	ex := newExecutor(t, landlock.Config{})
	for _, op := range moveOps {
		t.Run(op.name, func(t *testing.T) {
			t.Run("restricted, inside", func(t *testing.T) {
				base := dirs(t, ".")[0]
				fixture.Build(t, base, moveTree...)
				root := filepath.Join(base, "root")
				err := ex.Run(context.Background(), []string{root}, func() error {
					d, r, err := openDirs(root)
					if err != nil {
						return err
					}
					defer unix.Close(d) //nolint:errcheck // read-only descriptor
					defer unix.Close(r) //nolint:errcheck // read-only descriptor
					return op.do(d, r)
				})
				if op.device && err != nil && errorsIsPerm(err) {
					t.Skipf("mknod of a device is not permitted here: %v", err)
				}
				require.NoError(t, err)
				assert.True(t, op.landed(t, filepath.Join(root, "d"), root))
			})

			t.Run("restricted, moved out mid-call", func(t *testing.T) {
				base := dirs(t, ".")[0]
				fixture.Build(t, base, moveTree...)
				root := filepath.Join(base, "root")
				opened, moved := make(chan struct{}), make(chan struct{})
				var (
					before  map[string]string
					moveErr error
				)
				go func() {
					<-opened
					moveErr = os.Rename(filepath.Join(root, "d"), filepath.Join(base, "outside", "d"))
					before = fixture.Snapshot(t, base)
					close(moved)
				}()
				err := ex.Run(context.Background(), []string{root}, func() error {
					d, r, err := openDirs(root)
					close(opened)
					<-moved
					if err != nil {
						return err
					}
					defer unix.Close(d) //nolint:errcheck // read-only descriptor
					defer unix.Close(r) //nolint:errcheck // read-only descriptor
					return op.do(d, r)
				})
				require.NoError(t, moveErr)
				if op.crossDir {
					require.True(t, errorsIsAny(err, unix.EACCES, unix.EXDEV), "want EACCES or EXDEV, got %v", err)
				} else {
					require.ErrorIs(t, err, unix.EACCES)
				}
				assert.Equal(t, before, fixture.Snapshot(t, base), "nothing changes on disk")
			})

			t.Run("unrestricted, moved out", func(t *testing.T) {
				base := dirs(t, ".")[0]
				fixture.Build(t, base, moveTree...)
				root := filepath.Join(base, "root")
				d, r, err := openDirs(root)
				require.NoError(t, err)
				defer unix.Close(d) //nolint:errcheck // read-only descriptor
				defer unix.Close(r) //nolint:errcheck // read-only descriptor
				moved := filepath.Join(base, "outside", "d")
				require.NoError(t, os.Rename(filepath.Join(root, "d"), moved))
				err = op.do(d, r)
				if op.device && errorsIsPerm(err) {
					t.Skipf("mknod of a device is not permitted here: %v", err)
				}
				require.NoError(t, err)
				assert.True(t, op.landed(t, moved, root))
			})
		})
	}
}

// errorsIsAny reports whether err is one of targets.
func errorsIsAny(err error, targets ...unix.Errno) bool {
	for _, e := range targets {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// errorsIsPerm reports whether err is EPERM (mknod of a device where the
// device cgroup or a missing CAP_MKNOD forbids it).
func errorsIsPerm(err error) bool { return errors.Is(err, unix.EPERM) }

//go:build linux

package landlock_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/landlock"
)

// nobody is the uid and gid of an unprivileged user.
const nobody = 65534

// asNobody runs fn on a throwaway thread whose credentials alone are
// nobody's (setresuid on one thread; the Go wrappers change every thread).
func asNobody(t *testing.T, fn func()) {
	t.Helper()
	var err error
	onThrowawayThread(func() {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, nobody, nobody, nobody); e != 0 {
			err = e
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, nobody, nobody, nobody); e != 0 {
			err = e
			return
		}
		fn()
	})
	require.NoError(t, err)
}

// openParent opens rel beneath the confined handle on root.
func openParent(t *testing.T, root, rel string) *dirfd.Parent {
	t.Helper()
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	p, _, err := d.OpenParent(rel, false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestDenied(t *testing.T) {
	base := dirs(t, ".")[0]
	fixture.Build(t, base, "root/moved/", "root/staging/f: staged", "root/ro/", "outside/")
	root := filepath.Join(base, "root")
	require.NoError(t, os.Chmod(filepath.Join(root, "ro"), 0o555))
	ex := newExecutor(t, landlock.Config{})

	moved := openParent(t, root, "moved")
	staging := openParent(t, root, "staging")
	ro := openParent(t, root, "ro")
	require.NoError(t, os.Rename(filepath.Join(root, "moved"), filepath.Join(base, "outside", "moved")))

	// The domain's refusals, through a parent that has left the root.
	createErr := ex.Run(context.Background(), []string{root}, func() error {
		fd, err := unix.Openat(moved.FD(), "x", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err == nil {
			_ = unix.Close(fd)
		}
		return &os.PathError{Op: "open", Path: moved.Join("x"), Err: err}
	})
	require.ErrorIs(t, createErr, unix.EACCES)
	renameErr := ex.Run(context.Background(), []string{root}, func() error {
		if err := unix.Renameat(staging.FD(), "f", moved.FD(), "f"); err != nil {
			return &os.LinkError{Op: "rename", Old: staging.Join("f"), New: moved.Join("f"), Err: err}
		}
		return nil
	})
	require.Error(t, renameErr)

	// An ordinary permission error, through a parent still beneath the root:
	// ro is 0555, which refuses anyone without root's override (as root, on one
	// thread dropped to nobody).
	var ordinary error
	mkdirInRO := func() { ordinary = unix.Mkdirat(ro.FD(), "x", 0o755) }
	if os.Geteuid() == 0 {
		asNobody(t, mkdirInRO)
	} else {
		mkdirInRO()
	}
	require.ErrorIs(t, ordinary, unix.EACCES)

	tests := []struct {
		name    string
		err     error
		parents []*dirfd.Parent
		want    bool
	}{
		{"create refused in a parent moved out", createErr, []*dirfd.Parent{moved}, true},
		{"rename refused into a parent moved out", renameErr, []*dirfd.Parent{staging, moved}, true},
		{"the same refusal judged by the parent still inside only", renameErr, []*dirfd.Parent{staging}, false},
		{"EACCES with the parent inside is ordinary", ordinary, []*dirfd.Parent{ro}, false},
		{"EXDEV with the parent moved out", &os.LinkError{Op: "link", Err: unix.EXDEV}, []*dirfd.Parent{moved}, true},
		{"another error with the parent moved out", unix.ENOENT, []*dirfd.Parent{moved}, false},
		{"no error", nil, []*dirfd.Parent{moved}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, landlock.Denied(tc.err, tc.parents...))
		})
	}
	// Nothing moved into the moved-out directory.
	assert.Len(t, fixture.Snapshot(t, filepath.Join(base, "outside", "moved")), 1, "only the directory itself")
	assert.Equal(t, "staged", readText(t, filepath.Join(root, "staging", "f")))
}

//go:build linux

package fsbackend_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

func TestStat(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "five.txt: 12345", "empty.txt", "sub/", "link.txt => five.txt", "dangling => nowhere", "afile: x")
	ctx := context.Background()

	cases := []struct {
		name     string
		path     string
		wantNil  bool
		wantType fs.FileType
		wantSize int64 // checked when >= 0
	}{
		{"L-18 a 5-byte file is a file of size 5", "five.txt", false, fs.TypeFile, 5},
		{"L-18 an empty file is a file of size 0", "empty.txt", false, fs.TypeFile, 0},
		{"L-18 a directory is a directory", "sub", false, fs.TypeDirectory, -1},
		{"L-18 an absent file is nil, not an error", "absent.txt", true, "", 0},
		{"L-18 an absent file under an absent dir is nil", "no/such/file", true, "", 0},
		{"A-07 stat follows a symlink to its file", "link.txt", false, fs.TypeFile, 5},
		{"A-07 stat of a dangling symlink is absent", "dangling", true, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := f.Stat(ctx, resolve(t, f, tc.path))
			require.NoError(t, err)
			if tc.wantNil {
				assert.Nil(t, info)
				return
			}
			require.NotNil(t, info)
			assert.Equal(t, tc.wantType, info.Type)
			if tc.wantSize >= 0 {
				assert.Equal(t, tc.wantSize, info.Size)
			}
			assert.NotEmpty(t, info.Version)
		})
	}

	t.Run("L-13 a symlink and its destination report the same version", func(t *testing.T) {
		assert.Equal(t, versionOf(t, f, resolve(t, f, "five.txt")), versionOf(t, f, resolve(t, f, "link.txt")))
	})

	t.Run("L-18 the version is stable while the file is unchanged", func(t *testing.T) {
		tg := resolve(t, f, "five.txt")
		assert.Equal(t, versionOf(t, f, tg), versionOf(t, f, tg))
	})

	t.Run("L-24 stat of a target under a regular file (ENOTDIR) is absent, no error", func(t *testing.T) {
		// Resolve refuses such a path, so the target is one resolved while
		// "afile" did not exist yet, or built by hand.
		tg := fs.Target{Key: fs.TargetKey(dir + "/afile/child.txt"), DisplayPath: dir + "/afile/child.txt"}
		info, err := f.Stat(ctx, tg)
		require.NoError(t, err)
		assert.Nil(t, info)
	})

	t.Run("L-49 analog: stat of a self-referential symlink loop is FS_IO_ERROR, not absent", func(t *testing.T) {
		fixture.Build(t, dir, "loop => loop")
		info, err := f.Stat(ctx, resolve(t, f, "loop"))
		expectFSErr(t, err, fs.ErrIOError, `cannot stat "`+dir+`/loop": too many levels of symbolic links`)
		assert.Nil(t, info)
	})

	t.Run("L-24 a target resolved before its parent became a file is absent", func(t *testing.T) {
		tg := resolve(t, f, "later/child.txt")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "later"), []byte("file now"), 0o644))
		info, err := f.Stat(ctx, tg)
		require.NoError(t, err)
		assert.Nil(t, info)
	})
}

func TestStatVersionChangesOnSameSizeRewrite(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	p := filepath.Join(dir, "same.txt")
	fixture.Build(t, dir, "same.txt: aaaaa")
	old := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	require.NoError(t, os.Chtimes(p, old, old))
	tg := resolve(t, f, "same.txt")
	before := versionOf(t, f, tg)

	t.Run("L-19 same-size rewrite with restored mtime and atime still changes the version", func(t *testing.T) {
		_, err := f.WriteText(context.Background(), tg, "bbbbb", fs.WriteOptions{})
		require.NoError(t, err)
		require.NoError(t, os.Chtimes(p, old, old))

		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, int64(5), fi.Size(), "same size on disk")
		require.True(t, fi.ModTime().Equal(old), "mtime restored on disk")
		assert.Equal(t, "bbbbb", readFile(t, p))

		after := versionOf(t, f, tg)
		assert.NotEqual(t, before, after)
	})
}

func TestStatAborted(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.txt: a")
	present, absent := resolve(t, f, "a.txt"), resolve(t, f, "b.txt")

	cases := []struct {
		name string
		ctx  func() context.Context
		tg   fs.Target
	}{
		{"L-20 stat with a pre-cancelled context is FS_ABORTED", cancelled, present},
		{"L-20 stat of an absent target with a pre-cancelled context is FS_ABORTED, not absent", cancelled, absent},
		{"L-23 approximated: stat cancelled during the metadata call is FS_ABORTED, not success", func() context.Context { return abortAfterChecks(1) }, present},
		{"L-23 approximated: stat cancelled during the metadata call is FS_ABORTED, not absent", func() context.Context { return abortAfterChecks(1) }, absent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := f.Stat(tc.ctx(), tc.tg)
			expectFSErr(t, err, fs.ErrAborted, "stat aborted")
			assert.Nil(t, info)
		})
	}
}

func TestLstat(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	other := realTempDir(t)
	fixture.Build(t, dir, "file.txt: hello", "link.txt => file.txt", "dangling => nowhere", "sub/inner.txt: in", "dirlink => sub", "afile: x", "loop => loop")
	fixture.Build(t, other, "rel.txt: in other", "rlink => rel.txt")
	ctx := context.Background()

	cases := []struct {
		name     string
		path     string
		opts     fs.ResolveOptions
		wantNil  bool
		wantType fs.FileType
		wantSize int64 // checked when >= 0
	}{
		{"L-21 lstat of a regular file is file", "file.txt", fs.ResolveOptions{}, false, fs.TypeFile, 5},
		{"L-21 lstat of a symlink to a file is symlink", "link.txt", fs.ResolveOptions{}, false, fs.TypeSymlink, int64(len("file.txt"))},
		{"L-21 lstat of a missing path is nil", "missing.txt", fs.ResolveOptions{}, true, "", 0},
		{"A-07 lstat of a dangling symlink is symlink, not absent", "dangling", fs.ResolveOptions{}, false, fs.TypeSymlink, int64(len("nowhere"))},
		{"A-07 lstat of a symlink loop is symlink", "loop", fs.ResolveOptions{}, false, fs.TypeSymlink, int64(len("loop"))},
		{"A-07 lstat of a symlink to a dir is symlink", "dirlink", fs.ResolveOptions{}, false, fs.TypeSymlink, -1},
		{"A-07 lstat follows a symlink in the parent path", "dirlink/inner.txt", fs.ResolveOptions{}, false, fs.TypeFile, 2},
		{"A-07 lstat collapses dot-dot lexically", "dirlink/../file.txt", fs.ResolveOptions{}, false, fs.TypeFile, 5},
		{"A-07 lstat of a directory is directory", "sub", fs.ResolveOptions{}, false, fs.TypeDirectory, -1},
		{"L-22 lstat resolves a relative path against opts.Cwd", "rel.txt", fs.ResolveOptions{Cwd: other}, false, fs.TypeFile, int64(len("in other"))},
		{"L-22 lstat of a relative symlink under opts.Cwd is symlink", "rlink", fs.ResolveOptions{Cwd: other}, false, fs.TypeSymlink, -1},
		{"L-22 the same relative path without opts.Cwd is absent under the config cwd", "rel.txt", fs.ResolveOptions{}, true, "", 0},
		{"L-24 lstat under a regular file (ENOTDIR) is absent, no error", "afile/child.txt", fs.ResolveOptions{}, true, "", 0},
		{"L-24 lstat under a missing dir is absent", "nodir/child.txt", fs.ResolveOptions{}, true, "", 0},
		{"L-22 an absolute path ignores opts.Cwd", dir + "/link.txt", fs.ResolveOptions{Cwd: "/nonexistent"}, false, fs.TypeSymlink, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := f.Lstat(ctx, tc.path, tc.opts)
			require.NoError(t, err)
			if tc.wantNil {
				assert.Nil(t, info)
				return
			}
			require.NotNil(t, info)
			assert.Equal(t, tc.wantType, info.Type)
			if tc.wantSize >= 0 {
				assert.Equal(t, tc.wantSize, info.Size)
			}
			assert.NotEmpty(t, info.Version)
		})
	}

	t.Run("L-26 lstat of a symlink has size > 0 and its own version, distinct from the destination's", func(t *testing.T) {
		li, err := f.Lstat(ctx, "link.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		require.NotNil(t, li)
		assert.Equal(t, fs.TypeSymlink, li.Type)
		assert.Positive(t, li.Size)
		assert.NotEmpty(t, li.Version)
		assert.NotEqual(t, versionOf(t, f, resolve(t, f, "file.txt")), li.Version)
	})

	errCases := []struct {
		name string
		ctx  func() context.Context
		path string
		want *fs.Error
		msg  string
	}{
		{"L-22 lstat with a pre-cancelled context is FS_ABORTED", cancelled, "file.txt", fs.ErrAborted, "lstat aborted"},
		{"L-22 lstat of a missing path with a pre-cancelled context is FS_ABORTED", cancelled, "missing", fs.ErrAborted, "lstat aborted"},
		{"L-23 approximated: lstat cancelled during the metadata call is FS_ABORTED, not success", func() context.Context { return abortAfterChecks(1) }, "link.txt", fs.ErrAborted, "lstat aborted"},
		{"L-23 approximated: lstat cancelled during the metadata call is FS_ABORTED, not absent", func() context.Context { return abortAfterChecks(1) }, "missing", fs.ErrAborted, "lstat aborted"},
		{"L-22 lstat of a blank path is FS_NOT_FOUND", context.Background, "   ", fs.ErrNotFound, "file_path must be a non-empty string"},
		{"L-22 lstat of an empty path is FS_NOT_FOUND", context.Background, "", fs.ErrNotFound, "file_path must be a non-empty string"},
		{"lstat of a path with a NUL byte is FS_NOT_FOUND", context.Background, "a\x00b", fs.ErrNotFound, ""},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := f.Lstat(tc.ctx(), tc.path, fs.ResolveOptions{})
			expectFSErr(t, err, tc.want, tc.msg)
			assert.Nil(t, info)
		})
	}
}

func TestStatSpecialFiles(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	ctx := context.Background()

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o644))
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Logf("unix sockets unavailable: %v", err)
		sock = ""
	} else {
		t.Cleanup(func() { _ = ln.Close() })
	}

	for _, tc := range []struct{ name, path string }{
		{"L-25 a FIFO is other", fifo},
		{"L-25 a unix socket is other", sock},
		{"L-25 a character device is other", "/dev/null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == "" {
				t.Skip("unix sockets are forbidden here")
			}
			if _, err := os.Lstat(tc.path); err != nil {
				t.Skipf("%s unavailable: %v", tc.path, err)
			}
			info, err := f.Stat(ctx, resolve(t, f, tc.path))
			require.NoError(t, err)
			require.NotNil(t, info)
			assert.Equal(t, fs.TypeOther, info.Type)
			assert.NotEmpty(t, info.Version)

			li, err := f.Lstat(ctx, tc.path, fs.ResolveOptions{})
			require.NoError(t, err)
			require.NotNil(t, li)
			assert.Equal(t, fs.TypeOther, li.Type)
		})
	}
}

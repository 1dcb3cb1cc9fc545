//go:build linux

package fsbackend_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// expectFSErr asserts that err is a structured *fs.Error (never a raw OS
// error) matching the sentinel want by errors.Is, and, when msg is not empty,
// that its text is exactly msg.
func expectFSErr(t testing.TB, err error, want *fs.Error, msg string) {
	t.Helper()
	require.Error(t, err)
	fe, ok := errors.AsType[*fs.Error](err)
	require.Truef(t, ok, "want a structured *fs.Error, got %T: %v", err, err)
	assert.Truef(t, errors.Is(err, want), "want code %s, got %s (%v)", want.Code, fs.CodeOf(err), err)
	assert.EqualValues(t, want.Code, fe.Code)
	if msg != "" {
		assert.EqualError(t, err, msg)
	}
}

// abortingCtx is a context that is live for the first `live` calls of Err and
// cancelled from then on. It stands in deterministically for a caller that
// cancels while an operation is in flight: the operation's entry check passes
// and every later check sees the abort.
type abortingCtx struct {
	context.Context
	left atomic.Int64
	once sync.Once
	done chan struct{}
}

func abortAfterChecks(live int) *abortingCtx {
	c := &abortingCtx{Context: context.Background(), done: make(chan struct{})}
	c.left.Store(int64(live))
	return c
}

func (c *abortingCtx) Err() error {
	if c.left.Add(-1) >= 0 {
		return nil
	}
	c.once.Do(func() { close(c.done) })
	return context.Canceled
}

func (c *abortingCtx) Done() <-chan struct{} { return c.done }

// realTempDir returns a fresh temp dir by its canonical path.
func realTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

func TestResolveCwd(t *testing.T) {
	cfgDir, optDir := realTempDir(t), realTempDir(t)
	fixture.Build(t, optDir, "only-here.txt: from opts.Cwd")
	f, err := fslocal.New(fslocal.Config{Cwd: cfgDir}, nil)
	require.NoError(t, err)
	ctx := context.Background()

	t.Run("L-05 relative path resolves under opts.Cwd, not the config cwd", func(t *testing.T) {
		tg, err := f.Resolve(ctx, "only-here.txt", fs.ResolveOptions{Cwd: optDir})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(optDir, "only-here.txt"), tg.DisplayPath)
		assert.Equal(t, fs.TargetKey(filepath.Join(optDir, "only-here.txt")), tg.Key)
		text, err := f.ReadText(ctx, tg)
		require.NoError(t, err)
		assert.Equal(t, "from opts.Cwd", text)
	})

	t.Run("L-05 the same relative path without opts resolves under the config cwd and is FS_NOT_FOUND there", func(t *testing.T) {
		tg, err := f.Resolve(ctx, "only-here.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		dp := filepath.Join(cfgDir, "only-here.txt")
		assert.Equal(t, dp, tg.DisplayPath)
		assert.Equal(t, fs.TargetKey(dp), tg.Key)
		_, err = f.ReadText(ctx, tg)
		expectFSErr(t, err, fs.ErrNotFound, `cannot read "`+dp+`": not found`)
	})

	t.Run("L-06 an absolute path ignores opts.Cwd even when that cwd does not exist", func(t *testing.T) {
		abs := filepath.Join(optDir, "only-here.txt")
		tg, err := f.Resolve(ctx, abs, fs.ResolveOptions{Cwd: "/no/such/dir/anywhere"})
		require.NoError(t, err)
		assert.Equal(t, abs, tg.DisplayPath)
		assert.Equal(t, fs.TargetKey(abs), tg.Key)
	})

	t.Run("L-06 an absolute path is cleaned lexically", func(t *testing.T) {
		tg, err := f.Resolve(ctx, optDir+"/x/../only-here.txt", fs.ResolveOptions{Cwd: cfgDir})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(optDir, "only-here.txt"), tg.DisplayPath)
	})
}

func TestResolveAborted(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "a.txt: a")

	t.Run("L-07 a pre-cancelled context is FS_ABORTED resolve aborted", func(t *testing.T) {
		_, err := f.Resolve(cancelled(), "a.txt", fs.ResolveOptions{})
		expectFSErr(t, err, fs.ErrAborted, "resolve aborted")
		assert.ErrorIs(t, err, context.Canceled, "the cause is kept")
	})

	t.Run("L-07 a pre-cancelled context wins over a blank path", func(t *testing.T) {
		_, err := f.Resolve(cancelled(), "  ", fs.ResolveOptions{})
		expectFSErr(t, err, fs.ErrAborted, "resolve aborted")
	})

	t.Run("L-08 a cancel while resolution is in flight is FS_ABORTED (approximated: live at entry, cancelled after)", func(t *testing.T) {
		_, err := f.Resolve(abortAfterChecks(1), "a.txt", fs.ResolveOptions{})
		expectFSErr(t, err, fs.ErrAborted, "resolve aborted")
	})

	t.Run("L-07 a live context resolves", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tg, err := f.Resolve(ctx, "a.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, "a.txt"), tg.DisplayPath)
	})
}

func TestResolveIdentity(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base,
		"real/f.txt: top",
		"real/deep/inner/g.txt: inner",
		"real/deep/f.txt: deep",
		"real/link2 => deep/inner",
		"real/file-link.txt => f.txt",
		"real/afile: not a dir",
		"real/loop => loop",
		"ws => real",
	)
	realDir := filepath.Join(base, "real")
	ws := filepath.Join(base, "ws")
	f, err := fslocal.New(fslocal.Config{Cwd: ws}, nil)
	require.NoError(t, err)
	ctx := context.Background()

	cases := []struct {
		name    string
		path    string
		display string
		key     string
	}{
		{"L-09 display keeps the symlinked cwd, key is the realpath", "f.txt", ws + "/f.txt", realDir + "/f.txt"},
		{"L-09 dot-dot collapses lexically through a symlinked dir, not through the kernel", "link2/../f.txt", ws + "/f.txt", realDir + "/f.txt"},
		{"L-09 a path through a symlinked dir keys to the realpath", "link2/g.txt", ws + "/link2/g.txt", realDir + "/deep/inner/g.txt"},
		{"L-09 dot segments collapse", "./deep/./inner/../f.txt", ws + "/deep/f.txt", realDir + "/deep/f.txt"},
		{"L-10 a missing file keys to the parent realpath plus its name", "new.txt", ws + "/new.txt", realDir + "/new.txt"},
		{"L-11 missing dirs key to the nearest existing ancestor plus the missing suffix", "no-such-dir/child.txt", ws + "/no-such-dir/child.txt", realDir + "/no-such-dir/child.txt"},
		{"L-11 the nearest existing ancestor may be a symlinked dir", "link2/x/y/z.txt", ws + "/link2/x/y/z.txt", realDir + "/deep/inner/x/y/z.txt"},
		{"L-13 a file symlink keys to its destination, display stays the link", "file-link.txt", ws + "/file-link.txt", realDir + "/f.txt"},
		{"self-referential symlink loop resolves to the parent realpath plus its name", "loop", ws + "/loop", realDir + "/loop"},
		{"the cwd itself resolves", ".", ws, realDir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := f.Resolve(ctx, tc.path, fs.ResolveOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.display, tg.DisplayPath)
			assert.Equal(t, fs.TargetKey(tc.key), tg.Key)
		})
	}

	t.Run("L-13 two paths reaching one file share the key", func(t *testing.T) {
		a, err := f.Resolve(ctx, "f.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		b, err := f.Resolve(ctx, "file-link.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, a.Key, b.Key)
		assert.NotEqual(t, a.DisplayPath, b.DisplayPath)
	})

	t.Run("L-10 the key of a missing file is stable across its creation", func(t *testing.T) {
		before, err := f.Resolve(ctx, "later.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(realDir, "later.txt"), []byte("x"), 0o644))
		after, err := f.Resolve(ctx, "later.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, before, after)
	})

	t.Run("L-12 symlinked root: the key before creating subdir and file equals the key after creating them via the real path", func(t *testing.T) {
		before, err := f.Resolve(ctx, "sub/new/file.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, fs.TargetKey(realDir+"/sub/new/file.txt"), before.Key)
		require.NoError(t, os.MkdirAll(filepath.Join(realDir, "sub", "new"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(realDir, "sub", "new", "file.txt"), []byte("x"), 0o644))
		after, err := f.Resolve(ctx, "sub/new/file.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, before.Key, after.Key)
		assert.Equal(t, ws+"/sub/new/file.txt", after.DisplayPath)
	})

	t.Run("L-16 ProcessPath is the realpath", func(t *testing.T) {
		tg, err := f.Resolve(ctx, "file-link.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, realDir+"/f.txt", f.ProcessPath(tg))
	})
}

func TestResolveRejects(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "afile: plain", "sub/")
	ctx := context.Background()

	cases := []struct {
		name string
		path string
		want *fs.Error
		msg  string
	}{
		{"L-14 an empty path is FS_NOT_FOUND", "", fs.ErrNotFound, "file_path must be a non-empty string"},
		{"L-14 a blank path is FS_NOT_FOUND", " ", fs.ErrNotFound, "file_path must be a non-empty string"},
		{"L-14 a whitespace-only path is FS_NOT_FOUND", " \t\r\n ", fs.ErrNotFound, "file_path must be a non-empty string"},
		{
			"L-15 a path through a regular file is structured FS_NOT_FOUND", "afile/child.txt", fs.ErrNotFound,
			`cannot resolve "` + dir + `/afile/child.txt": a parent path segment is not a directory`,
		},
		{
			"L-15 a deeper path through a regular file is FS_NOT_FOUND", "afile/x/y.txt", fs.ErrNotFound,
			`cannot resolve "` + dir + `/afile/x/y.txt": a parent path segment is not a directory`,
		},
		{"a NUL byte in the path is FS_NOT_FOUND", "sub/a\x00b.txt", fs.ErrNotFound, ""},
		{"a NUL byte as the whole name is FS_NOT_FOUND", "\x00", fs.ErrNotFound, ""},
		{"a component longer than 255 bytes is FS_IO_ERROR, not a panic", strings.Repeat("n", 300), fs.ErrIOError, ""},
		{"a component longer than 255 bytes under an existing dir is FS_IO_ERROR", "sub/" + strings.Repeat("n", 256), fs.ErrIOError, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := fixture.Snapshot(t, dir)
			tg, err := f.Resolve(ctx, tc.path, fs.ResolveOptions{})
			expectFSErr(t, err, tc.want, tc.msg)
			assert.Zero(t, tg)
			assert.Equal(t, before, fixture.Snapshot(t, dir), "resolve must not touch the disk")
		})
	}

	t.Run("a NUL byte message names the path with the NUL made visible", func(t *testing.T) {
		_, err := f.Resolve(ctx, "a\x00b", fs.ResolveOptions{})
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "\x00")
	})
}

func TestFileURL(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "my file.txt: x", "odd #?%;name.txt: y")
	ctx := context.Background()

	t.Run("L-16 FileURL percent-encodes a space", func(t *testing.T) {
		tg, err := f.Resolve(ctx, "my file.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, "file://"+dir+"/my%20file.txt", f.FileURL(tg))
	})

	for _, name := range []string{"my file.txt", "odd #?%;name.txt", "missing dir/x y.txt"} {
		t.Run("L-16 FileURL round-trips to ProcessPath for "+name, func(t *testing.T) {
			tg, err := f.Resolve(ctx, name, fs.ResolveOptions{})
			require.NoError(t, err)
			u, err := url.Parse(f.FileURL(tg))
			require.NoError(t, err)
			assert.Equal(t, "file", u.Scheme)
			assert.Empty(t, u.Host)
			assert.Empty(t, u.RawQuery)
			assert.Empty(t, u.Fragment)
			assert.Equal(t, f.ProcessPath(tg), u.Path)
			assert.Equal(t, string(tg.Key), f.ProcessPath(tg))
		})
	}
}

func TestContains(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base, "ws/inner/f.txt: x", "ws-evil/f.txt: y", "wslink => ws/inner")
	ws := filepath.Join(base, "ws")
	f, err := fslocal.New(fslocal.Config{Cwd: ws}, nil)
	require.NoError(t, err)
	ctx := context.Background()
	res := func(p string) fs.Target {
		t.Helper()
		tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
		require.NoError(t, err)
		return tg
	}
	root := res(".")

	cases := []struct {
		name   string
		root   fs.Target
		target fs.Target
		want   bool
	}{
		{"L-17 root contains itself", root, root, true},
		{"L-17 root contains a child", root, res("inner/f.txt"), true},
		{"L-17 root contains a missing child", root, res("inner/new/deep.txt"), true},
		{"L-17 root does not contain its parent", root, res(".."), false},
		{"L-17 the sibling prefix ws-evil is not contained in ws", root, res("../ws-evil/f.txt"), false},
		{"L-17 the sibling ws-evil dir itself is not contained in ws", root, res("../ws-evil"), false},
		{"L-17 a child does not contain the root", res("inner"), root, false},
		{"L-17 containment is by key: a link outside the root into it is contained", root, res("../wslink/f.txt"), true},
		{"L-17 filesystem root contains everything", res("/"), root, true},
		{"L-17 a zero root target (no canonical path) contains nothing: fail closed", fs.Target{}, root, false},
		{"L-17 nothing contains a zero target", root, fs.Target{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, f.Contains(tc.root, tc.target), "Contains(%s, %s)", tc.root.Key, tc.target.Key)
		})
	}
}

//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

func TestMkdir(t *testing.T) {
	cases := []struct {
		name    string
		fixture []string
		path    string
		parents bool
		code    fs.Code
		created int
	}{
		{name: "a new directory is made", path: "d", created: 1},
		{name: "with parents every missing directory is made", path: "a/b/c", parents: true, created: 3},
		{name: "with parents an existing directory is no error", fixture: []string{"d/"}, path: "d", parents: true, created: 0},
		{name: "without parents an existing directory already exists", fixture: []string{"d/"}, path: "d", code: fs.CodeAlreadyExists},
		{name: "a file at the target already exists, even with parents", fixture: []string{"f: x"}, path: "f", parents: true, code: fs.CodeAlreadyExists},
		{name: "a dangling symlink at the target already exists and is not followed", fixture: []string{"l => gone"}, path: "l", parents: true, code: fs.CodeAlreadyExists},
		{name: "without parents a missing parent is not found", path: "a/b", code: fs.CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, tc.fixture...)
			before := fixture.Snapshot(t, dir)
			out, err := f.Mkdir(context.Background(), resolve(t, f, tc.path), fs.MkdirOptions{Parents: tc.parents})
			if tc.code != "" {
				assert.EqualValues(t, tc.code, fs.CodeOf(err), "error: %v", err)
				assert.Equal(t, before, fixture.Snapshot(t, dir), "a failed mkdir changed the disk")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.created, out.Created)
			info, err := os.Lstat(filepath.Join(dir, tc.path))
			require.NoError(t, err)
			assert.True(t, info.IsDir())
		})
	}
}

func TestRemove(t *testing.T) {
	cases := []struct {
		name      string
		fixture   []string
		path      string
		recursive bool
		code      fs.Code
		want      fs.RemoveOutcome
		gone      string   // path that must be gone
		kept      []string // paths that must remain
	}{
		{name: "a file is deleted", fixture: []string{"f: x"}, path: "f", want: fs.RemoveOutcome{Type: fs.TypeFile}, gone: "f"},
		{
			name: "a symlink is deleted itself, its destination kept", fixture: []string{"t: x", "l => t"}, path: "l",
			want: fs.RemoveOutcome{Type: fs.TypeSymlink}, gone: "l", kept: []string{"t"},
		},
		{name: "an empty directory is deleted", fixture: []string{"d/"}, path: "d", want: fs.RemoveOutcome{Type: fs.TypeDirectory, Directories: 1}, gone: "d"},
		{name: "a non-empty directory needs recursive", fixture: []string{"d/f: x"}, path: "d", code: fs.CodeNotEmpty},
		{
			name: "recursive deletes everything beneath, counted", fixture: []string{"d/f: x", "d/e/g: y", "d/e/h/", "d/l => /etc"}, path: "d", recursive: true,
			want: fs.RemoveOutcome{Type: fs.TypeDirectory, Files: 2, Directories: 3, Others: 1}, gone: "d",
		},
		{
			name: "recursive never follows a symlink to a directory", fixture: []string{"keep/k: keep", "d/l => ../keep"}, path: "d", recursive: true,
			want: fs.RemoveOutcome{Type: fs.TypeDirectory, Directories: 1, Others: 1}, gone: "d", kept: []string{"keep/k"},
		},
		{name: "a missing entry is not found", path: "nope", code: fs.CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, tc.fixture...)
			before := fixture.Snapshot(t, dir)
			out, err := f.Remove(context.Background(), resolve(t, f, tc.path), fs.RemoveOptions{Recursive: tc.recursive})
			if tc.code != "" {
				assert.EqualValues(t, tc.code, fs.CodeOf(err), "error: %v", err)
				assert.Equal(t, before, fixture.Snapshot(t, dir), "a failed delete changed the disk")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, out)
			_, err = os.Lstat(filepath.Join(dir, tc.gone))
			assert.True(t, os.IsNotExist(err), "%s must be gone", tc.gone)
			for _, k := range tc.kept {
				assert.FileExists(t, filepath.Join(dir, k))
			}
		})
	}
}

func TestRemoveVersionGuard(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "f: x")
	tg := resolve(t, f, "f")
	v := versionOf(t, f, tg)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("changed"), 0o644))
	_, err := f.Remove(context.Background(), tg, fs.RemoveOptions{Version: v})
	assert.EqualValues(t, fs.CodeStaleVersion, fs.CodeOf(err), "error: %v", err)
	assert.Equal(t, "changed", readFile(t, filepath.Join(dir, "f")))
}

func TestMove(t *testing.T) {
	cases := []struct {
		name      string
		fixture   []string
		from, to  string
		overwrite bool
		code      fs.Code
		typ       fs.FileType
		replaced  bool
		after     map[string]string // path -> content ("" for a directory)
	}{
		{name: "a file moves across directories", fixture: []string{"a: A", "d/"}, from: "a", to: "d/b", typ: fs.TypeFile, after: map[string]string{"d/b": "A"}},
		{name: "a directory moves with its contents", fixture: []string{"d/f: F"}, from: "d", to: "e", typ: fs.TypeDirectory, after: map[string]string{"e/f": "F"}},
		{name: "a symlink moves itself", fixture: []string{"t: T", "l => t"}, from: "l", to: "m", typ: fs.TypeSymlink, after: map[string]string{"t": "T"}},
		{name: "an existing destination is not replaced", fixture: []string{"a: A", "b: B"}, from: "a", to: "b", code: fs.CodeAlreadyExists},
		{name: "overwrite replaces a file", fixture: []string{"a: A", "b: B"}, from: "a", to: "b", overwrite: true, typ: fs.TypeFile, replaced: true, after: map[string]string{"b": "A"}},
		{name: "overwrite of a non-empty directory is refused", fixture: []string{"d/f: F", "e/g: G"}, from: "d", to: "e", overwrite: true, code: fs.CodeNotEmpty},
		{name: "a directory into itself is refused", fixture: []string{"d/"}, from: "d", to: "d/e", code: fs.CodeNotDirectory},
		{name: "a missing source is not found", from: "nope", to: "b", code: fs.CodeNotFound},
		{name: "a missing destination directory is not found", fixture: []string{"a: A"}, from: "a", to: "x/b", code: fs.CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			fixture.Build(t, dir, tc.fixture...)
			before := fixture.Snapshot(t, dir)
			out, err := f.Move(context.Background(), resolve(t, f, tc.from), resolve(t, f, tc.to), fs.MoveOptions{Overwrite: tc.overwrite})
			if tc.code != "" {
				assert.EqualValues(t, tc.code, fs.CodeOf(err), "error: %v", err)
				assert.Equal(t, before, fixture.Snapshot(t, dir), "a failed move changed the disk")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.typ, out.Type)
			assert.Equal(t, tc.replaced, out.Replaced)
			assert.NotEmpty(t, out.Version)
			_, err = os.Lstat(filepath.Join(dir, tc.from))
			assert.True(t, os.IsNotExist(err), "the source must be gone")
			info, err := os.Lstat(filepath.Join(dir, tc.to))
			require.NoError(t, err)
			assert.Equal(t, tc.typ == fs.TypeSymlink, info.Mode()&os.ModeSymlink != 0)
			for p, content := range tc.after {
				assert.Equal(t, content, readFile(t, filepath.Join(dir, p)))
			}
		})
	}
}

// TestMoveAcrossFilesystems moves between the test directory and /dev/shm
// (a tmpfs) when they are two filesystems: a file is copied and the source
// removed; a directory is refused with FS_CROSS_DEVICE and nothing changes.
func TestMoveAcrossFilesystems(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	other, err := os.MkdirTemp("/dev/shm", "harness-move-")
	if err != nil {
		t.Skipf("no second filesystem: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(other) })
	var a, b unixStat
	require.NoError(t, statDev(dir, &a))
	require.NoError(t, statDev(other, &b))
	if a.dev == b.dev {
		t.Skip("/dev/shm is on the same filesystem as the test directory")
	}
	fixture.Build(t, dir, "a.txt: across", "d/f: F")
	require.NoError(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o600))
	out, err := f.Move(context.Background(), resolve(t, f, "a.txt"), resolve(t, f, other+"/b.txt"), fs.MoveOptions{})
	require.NoError(t, err)
	assert.True(t, out.Copied)
	assert.Equal(t, "across", readFile(t, filepath.Join(other, "b.txt")))
	info, err := os.Stat(filepath.Join(other, "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.NoFileExists(t, filepath.Join(dir, "a.txt"))

	_, err = f.Move(context.Background(), resolve(t, f, "d"), resolve(t, f, other+"/d"), fs.MoveOptions{})
	assert.EqualValues(t, fs.CodeCrossDevice, fs.CodeOf(err), "error: %v", err)
	assert.Equal(t, "F", readFile(t, filepath.Join(dir, "d/f")))
	assert.NoDirExists(t, filepath.Join(other, "d"))
}

type unixStat struct{ dev uint64 }

func statDev(p string, out *unixStat) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	out.dev = st.Dev
	return nil
}

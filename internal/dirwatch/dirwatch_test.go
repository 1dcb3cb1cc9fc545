package dirwatch_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/dirwatch"
)

// TestChanged: each kind of change of a watched directory, of an entry in it
// or of the directory itself is reported by the next Changed, and stays
// reported; reading or writing a file's content is not a change.
func TestChanged(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   bool
	}{
		{"nothing", func(*testing.T, string) {}, false},
		{"a file read", func(t *testing.T, dir string) {
			_, err := os.ReadFile(filepath.Join(dir, "f"))
			require.NoError(t, err)
		}, false},
		{"a file's content written", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("other"), 0o644))
		}, false},
		{"a file made", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "new"), nil, 0o600))
		}, true},
		{"a file removed", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "f"))) }, true},
		{"a file's mode changed", func(t *testing.T, dir string) { require.NoError(t, os.Chmod(filepath.Join(dir, "f"), 0o600)) }, true},
		{"a file's times changed", func(t *testing.T, dir string) {
			require.NoError(t, os.Chtimes(filepath.Join(dir, "f"), time.Unix(1, 0), time.Unix(1, 0)))
		}, true},
		{"a file renamed within", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "g")))
		}, true},
		{"a subdirectory's mode changed", func(t *testing.T, dir string) { require.NoError(t, os.Chmod(filepath.Join(dir, "sub"), 0o700)) }, true},
		{"the directory's own mode changed", func(t *testing.T, dir string) { require.NoError(t, os.Chmod(dir, 0o700)) }, true},
		{"the directory moved away and another put in its place", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(dir, dir+".old"))
			require.NoError(t, os.Mkdir(dir, 0o755))
		}, true},
		{"the directory removed", func(t *testing.T, dir string) { require.NoError(t, os.RemoveAll(dir)) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
			s, err := dirwatch.New(10)
			require.NoError(t, err)
			defer s.Close() //nolint:errcheck // test
			require.True(t, s.Add(dir))
			require.False(t, s.Changed(), "nothing changed yet")
			c.change(t, dir)
			assert.Equal(t, c.want, s.Changed())
			assert.Equal(t, c.want, s.Changed(), "a change stays reported")
		})
	}
}

// TestAddRefuses: a filesystem whose changes inotify may miss is not
// watched, nor a missing path, nor one past the limit; each is reported so
// the caller does not trust Changed.
func TestAddRefuses(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	require.NoError(t, os.Mkdir(dir, 0o755))
	s, err := dirwatch.New(1)
	require.NoError(t, err)
	defer s.Close() //nolint:errcheck // test
	assert.False(t, s.Add("/proc/self/status"), "procfs")
	assert.False(t, s.Add(filepath.Join(base, "missing")), "a missing path")
	assert.True(t, s.Add(dir))
	assert.False(t, s.Add(base), "past the limit")
}

// TestFileChangedThroughAnotherPath: a watched file's mode changed through
// another hard link, in a directory nobody watches, is reported; so is a
// symlink watched itself, never its target.
func TestFileChangedThroughAnotherPath(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"watched", "elsewhere"} {
		require.NoError(t, os.Mkdir(filepath.Join(base, d), 0o755))
	}
	f := filepath.Join(base, "watched", "f")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	require.NoError(t, os.Link(f, filepath.Join(base, "elsewhere", "f")))
	target := filepath.Join(base, "elsewhere", "target")
	require.NoError(t, os.WriteFile(target, nil, 0o644))
	link := filepath.Join(base, "watched", "link")
	require.NoError(t, os.Symlink(target, link))
	s, err := dirwatch.New(10)
	require.NoError(t, err)
	defer s.Close() //nolint:errcheck // test
	require.True(t, s.Add(f))
	require.True(t, s.Add(link))
	require.NoError(t, os.Chmod(target, 0o600))
	assert.False(t, s.Changed(), "a symlink's target is not watched through it")
	require.NoError(t, os.Chmod(filepath.Join(base, "elsewhere", "f"), 0o600))
	assert.True(t, s.Changed(), "the file's mode changed through its other link")
}

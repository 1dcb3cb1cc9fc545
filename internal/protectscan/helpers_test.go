//go:build linux

package protectscan_test

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
)

// hangLimit bounds every scan that must not block (a FIFO).
const hangLimit = 10 * time.Second

// protectMeta is the tests' Match: the version-control metadata names, and
// any entry whose name ends in ".key".
func protectMeta(rel string, _ bool) bool {
	switch base := path.Base(rel); base {
	case ".git", ".hg", ".jj", ".svn":
		return true
	default:
		return strings.HasSuffix(base, ".key")
	}
}

// tempRoot returns a fresh canonical directory.
func tempRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

// build creates spec beneath base. Each item is "dir/" (a directory with its
// parents), "file" or "file=content" (a regular file), "link->target" (a
// symlink) or "fifo|" (a FIFO).
func build(t *testing.T, base string, spec ...string) {
	t.Helper()
	for _, s := range spec {
		switch {
		case strings.Contains(s, "->"):
			name, target, _ := strings.Cut(s, "->")
			p := filepath.Join(base, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.Symlink(target, p))
		case strings.HasSuffix(s, "/"):
			require.NoError(t, os.MkdirAll(filepath.Join(base, s), 0o755))
		case strings.HasSuffix(s, "|"):
			p := filepath.Join(base, strings.TrimSuffix(s, "|"))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, unix.Mkfifo(p, 0o644))
		default:
			name, content, _ := strings.Cut(s, "=")
			p := filepath.Join(base, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		}
	}
}

// manyFiles creates n empty regular files in dir (created with its parents).
func manyFiles(t testing.TB, dir string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(dfd) //nolint:errcheck // read-only descriptor
	for i := range n {
		if err := unix.Mknodat(dfd, "f"+padded(i), unix.S_IFREG|0o644, 0); err != nil && !errors.Is(err, unix.EEXIST) {
			require.NoError(t, err)
		}
	}
}

// padded returns i in decimal, zero-padded to seven digits.
func padded(i int) string {
	var b [7]byte
	for j := len(b) - 1; j >= 0; j-- {
		b[j] = byte('0' + i%10)
		i /= 10
	}
	return string(b[:])
}

// pathsOf returns the entries' paths relative to base.
func pathsOf(t *testing.T, base string, entries []protectscan.Entry) []string {
	t.Helper()
	out := []string{}
	for _, e := range entries {
		rel, err := filepath.Rel(base, e.Path)
		require.NoError(t, err)
		out = append(out, rel)
	}
	return out
}

// identity returns the lstat device and inode of p.
func identity(t *testing.T, p string) (dev, ino uint64) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return st.Dev, st.Ino
}

// ageTree sets the mtime of every directory beneath base (and base) an hour
// back, so the racy-timestamp rule does not make the next scan re-read them.
func ageTree(t *testing.T, base string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
}

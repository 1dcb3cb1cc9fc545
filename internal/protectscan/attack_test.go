//go:build linux

package protectscan_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
)

// TestAttack_MovedDirKeepsStalePath (attack review of issue 34): a watched
// directory moved (the kept result dropped, the tree walked again) reports
// its events under where the walk found it, and a name not found where its
// event says matters: a .git made in it later is seen.
func TestAttack_MovedDirKeepsStalePath(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/a/c/")
	ws := filepath.Join(base, "ws")
	roots := []protectscan.Root{{Path: ws}}
	s := protectscan.New(protectscan.Options{})
	_, _, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	require.NoError(t, os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "b")))
	_, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	require.False(t, reused)
	build(t, base, "ws/b/c/.git/")
	got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, walked(t, roots), got, "reused=%v: the .git made in a moved directory is missed", reused)
}

// TestAttack_HardLinkedPlaceholderFilledLater (attack review of issue 34): a
// `.git` made as a hard link of a placeholder-shaped file (0444, marked, <= 2
// bytes) could be given a gitdir line through its other name, in a directory
// where no name matters; a file of two names is no placeholder, so its making
// matters and the kept result learns of it.
func TestAttack_HardLinkedPlaceholderFilledLater(t *testing.T) {
	requireNotifications(t)
	base := tempRoot(t)
	build(t, base, "ws/sub/x", "ws/o/f=x", "ws/gd/hooks/")
	ws := filepath.Join(base, "ws")
	f := filepath.Join(ws, "o/f")
	if err := unix.Setxattr(f, protectscan.PlaceholderXattr, []byte("1"), 0); err != nil {
		t.Skip("no user xattrs: ", err)
	}
	require.NoError(t, os.Chmod(f, 0o444))
	roots := []protectscan.Root{{Path: ws}}
	s := protectscan.New(protectscan.Options{})
	_, _, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	require.NoError(t, os.Link(f, filepath.Join(ws, "sub/.git")))
	_, _, err = s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(f, 0o644))
	require.NoError(t, os.WriteFile(f, []byte("gitdir: ../gd\n"), 0o644))
	got, reused, err := s.ScanReused(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, pathsOf(t, base, walked(t, roots)), pathsOf(t, base, got), "reused=%v: the filled .git file is missed", reused)
}

// TestAttack_MarkedFileWithPayloadIsNoPlaceholder: a file shaped and
// marked like a placeholder (mode 0444, the mark, a few bytes) counts as
// one only while it holds a placeholder's content; one holding anything
// else (a `.git` file naming a git directory) is reported.
func TestAttack_MarkedFileWithPayloadIsNoPlaceholder(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/a/x", "ws/b/x", "ws/gd/hooks/")
	ws := filepath.Join(base, "ws")
	for dir, content := range map[string]string{"a": protectscan.BashProfilePlaceholder, "b": "gitdir: ../gd\n"} {
		f := filepath.Join(ws, dir, ".git")
		require.NoError(t, os.WriteFile(f, []byte(content), 0o600))
		if err := unix.Setxattr(f, protectscan.PlaceholderXattr, []byte("1"), 0); err != nil {
			t.Skip("no user xattrs: ", err)
		}
		require.NoError(t, os.Chmod(f, 0o444))
	}
	roots := []protectscan.Root{{Path: ws}}
	got, err := protectscan.New(protectscan.Options{}).Scan(t.Context(), roots, protectMeta)
	require.NoError(t, err)
	assert.Equal(t, []string{"ws/b/.git", "ws/gd"}, pathsOf(t, base, got)) // the file and the git directory it names
}

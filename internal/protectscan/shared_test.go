//go:build linux

package protectscan_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
)

// Uids of the Shared-root test: the commands' owner, and another user.
const (
	ownerUID = 4242
	otherUID = 12345
)

func TestScan_SharedRootCountsOnlyTheOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give entries to other uids")
	}
	base := tempRoot(t)
	tmp := filepath.Join(base, "tmp")
	build(t, tmp+"/",
		"mine/.git/", "mine/sub/.hg/", "mine/theirs-inside/.git/", "mine/id.key",
		"theirs/.git/", "theirs/mine-inside/.git/",
		".git/", "plant/.git->/", ".X11-unix/.git/", "fifo.key|",
		"mine/.jj|",
		"mine/wt/.git=gitdir: "+tmp+"/theirs/repo.git", "theirs/repo.git/",
		"mine/wt2/.git=gitdir: "+tmp+"/mine/repo.git", "mine/repo.git/",
	)
	manyFiles(t, filepath.Join(tmp, "theirs-many"), 2_000)
	manyFiles(t, tmp, 2_000) // files of unknown owner in the root itself
	for _, p := range []string{
		"mine", "mine/.git", "mine/sub", "mine/sub/.hg", "mine/id.key", "mine/.jj",
		"mine/wt", "mine/wt/.git", "mine/wt2", "mine/wt2/.git", "mine/repo.git",
		"theirs/mine-inside", "theirs/mine-inside/.git",
	} {
		require.NoError(t, os.Lchown(filepath.Join(tmp, p), ownerUID, ownerUID))
	}
	for _, p := range []string{
		"theirs", "theirs/.git", "theirs/repo.git", "mine/theirs-inside", "mine/theirs-inside/.git",
		".git", "plant", "plant/.git", "theirs-many", "fifo.key",
	} {
		require.NoError(t, os.Lchown(filepath.Join(tmp, p), otherUID, otherUID))
	}
	// .X11-unix and everything not listed stay root's: not the owner's either.

	roots := []protectscan.Root{{Path: tmp, Shared: true, Owner: ownerUID}}
	// The budget is far below the 2,000 files of the other user's directory
	// (not entered) and of the root (not the owner's directory: not
	// counted).
	s := protectscan.New(protectscan.Options{MaxEntries: 100})
	got := scanWithin(t, s, roots)
	assert.ElementsMatch(t, []string{
		"tmp/mine/.git", "tmp/mine/sub/.hg", "tmp/mine/id.key", "tmp/mine/.jj",
		"tmp/mine/wt/.git", "tmp/mine/wt2/.git", "tmp/mine/repo.git",
	}, pathsOf(t, base, got))

	// The same tree as an ordinary root: everything counts.
	got = scanWithin(t, protectscan.New(protectscan.Options{}), []protectscan.Root{{Path: tmp}})
	assert.Contains(t, pathsOf(t, base, got), "tmp/theirs/.git")
	assert.Contains(t, pathsOf(t, base, got), "tmp/theirs/repo.git")
	assert.NotContains(t, pathsOf(t, base, got), "tmp/plant/.git")

	// The same directory of files, given to the owner, counts.
	require.NoError(t, os.Lchown(filepath.Join(tmp, "theirs-many"), ownerUID, ownerUID))
	_, err := protectscan.New(protectscan.Options{MaxEntries: 100}).Scan(t.Context(), roots, protectMeta)
	var be *protectscan.BudgetError
	require.ErrorAs(t, err, &be, "the owner's own directory of files counts")
	assert.Equal(t, filepath.Join(tmp, "theirs-many"), be.Dir)
}

func TestScan_SharedRootSkipsAnotherUsersUnreadableDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give entries to other uids")
	}
	base := tempRoot(t)
	tmp := filepath.Join(base, "tmp")
	build(t, tmp+"/", "locked/.git/", "mine/.git/")
	require.NoError(t, os.Lchown(filepath.Join(tmp, "locked"), otherUID, otherUID))
	require.NoError(t, os.Chmod(filepath.Join(tmp, "locked"), 0o700))
	require.NoError(t, os.Lchown(filepath.Join(tmp, "mine"), ownerUID, ownerUID))
	require.NoError(t, os.Lchown(filepath.Join(tmp, "mine/.git"), ownerUID, ownerUID))
	roots := []protectscan.Root{{Path: tmp, Shared: true, Owner: ownerUID}}

	// Scan as the owner would: with its uid, so another user's 0700
	// directory cannot be opened.
	for _, p := range []string{filepath.Dir(base), base} {
		require.NoError(t, os.Chmod(p, 0o755))
	}
	got, err := scanAs(t, ownerUID, func() ([]protectscan.Entry, error) {
		_, err := os.ReadDir(filepath.Join(tmp, "locked"))
		require.ErrorIs(t, err, os.ErrPermission, "the scan runs without root's file capabilities")
		return protectscan.New(protectscan.Options{}).Scan(t.Context(), roots, protectMeta)
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"tmp/mine/.git"}, pathsOf(t, base, got))
}

// scanAs runs fn on a locked OS thread whose filesystem uid is uid (which
// drops root's file capabilities on it), and restores it.
func scanAs(t *testing.T, uid int, fn func() ([]protectscan.Entry, error)) ([]protectscan.Entry, error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, err := unix.SetfsuidRetUid(uid)
	require.NoError(t, err)
	defer func() { _, _ = unix.SetfsuidRetUid(prev) }()
	return fn()
}

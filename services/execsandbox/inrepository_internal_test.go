//go:build linux

package execsandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestInRepository: whether git, started in a root, finds a repository
// above it, which decides the kind of the root's `.git` placeholder (an
// empty directory in one, a pipe elsewhere): another command's
// placeholder on the parent is none (it made go build fail again); a
// symlinked `.git` is one, as git follows it; a repository beyond a file
// system's boundary is none, where git stops (the review's input: a
// workspace on its own mount below a repository got the directory, and
// go build failed).
func TestInRepository(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	gitInit := func(dir string) {
		out, err := exec.Command("git", "init", "-q", dir).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	repo := filepath.Join(base, "repo")
	gitInit(repo)
	ws := filepath.Join(repo, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	assert.True(t, inRepository(ws), "a directory of a repository")

	plain := filepath.Join(base, "plain", "ws")
	require.NoError(t, os.MkdirAll(plain, 0o755))
	assert.False(t, inRepository(plain), "no repository above")
	for _, dir := range []bool{true, false} {
		r, err := subproc.ReserveEither(filepath.Join(base, "plain", ".git"), dir)
		require.NoError(t, err)
		require.NotNil(t, r)
		assert.False(t, inRepository(plain), "another command's placeholder on the parent (dir %v)", dir)
		subproc.ReleaseAll(r)
	}

	linked := filepath.Join(base, "linked", "ws")
	require.NoError(t, os.MkdirAll(linked, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(repo, ".git"), filepath.Join(base, "linked", ".git")))
	assert.True(t, inRepository(linked), "a symlinked .git, which git follows")

	bare := filepath.Join(base, "bare.git")
	out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.True(t, inRepository(bare), "a bare repository itself")

	if os.Geteuid() != 0 {
		t.Skip("a file system's boundary needs a mount: root only")
	}
	mounted := filepath.Join(repo, "mounted")
	require.NoError(t, os.Mkdir(mounted, 0o755))
	require.NoError(t, unix.Mount("tmpfs", mounted, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(mounted, unix.MNT_DETACH) })
	assert.False(t, inRepository(mounted), "a repository beyond a file system's boundary")
}

//go:build linux

package subproc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestVanishedNamesThePath (issue 34): bubblewrap 0.8's messages for a
// path of the view that a process outside removed or replaced while
// bubblewrap made it (as they were seen under churn) are a change, and name
// the path; its other failures (no namespace, a read-only area) are not.
func TestVanishedNamesThePath(t *testing.T) {
	const repo = "/tmp/t/tmproot/repo-36"
	c := &subproc.Confinement{
		WritableRoots: []string{"/tmp/t/ws", "/tmp/t/tmproot"},
		Protected:     []subproc.Protected{{Path: repo + "/objects/info/alternates"}, {Path: "/tmp/t/ws/.git/config"}},
		Reserved:      []subproc.Reserved{{Path: repo + "/config", Holder: repo}, {Path: repo + "/hooks", Dir: true, Holder: repo}},
		// A root secret's directory another process removed (the parent
		// of its mask's mount point gone: bubblewrap tries to make it in
		// the read-only root).
		Masked: []subproc.Masked{{Path: "/var/lib/harness-gone-36/private", Dir: true}, {Path: "/var/lib/harness-gone-36/staged"}},
		// Another process's socket, masked, removed meanwhile.
		MaskedSockets: []string{"/var/tmp/harness-gone-36/agent.sock"},
	}
	for _, m := range []struct{ msg, path string }{
		{"bwrap: Can't get type of source " + repo + "/config: No such file or directory", repo + "/config"},
		{"bwrap: Can't find source path " + repo + "/config: No such file or directory", repo + "/config"},
		{"bwrap: Can't mkdir parents for " + repo + "/hooks: No such file or directory", repo + "/hooks"},
		{"bwrap: Can't mkdir " + repo + "/hooks: Not a directory", repo + "/hooks"},
		{"bwrap: Can't create file at /tmp/t/ws/.git/config: No such file or directory", "/tmp/t/ws/.git/config"},
		{"bwrap: Can't bind mount /oldroot/tmp/t/ws/.git/config on /newroot/tmp/t/ws/.git/config: Unable to mount source on destination: No such file or directory", "/tmp/t/ws/.git/config"},
		{`bwrap: Can't bind mount /oldroot/tmp/t/ws/.git/config on /newroot/tmp/t/ws/.git/config: Unable to remount destination "/newroot/tmp/t/ws/.git/config" with correct flags: Invalid argument`, "/tmp/t/ws/.git/config"},
		{`bwrap: Can't bind mount /oldroot/tmp/t/ws/.git/config on /newroot/tmp/t/ws/.git/config: Unable to find "/newroot/tmp/t/ws/.git/config" in mount table`, "/tmp/t/ws/.git/config"},
		{"bwrap: Can't mount tmpfs on /newroot" + repo + "/hooks: No such file or directory", repo + "/hooks"},
		{"bwrap: Can't mount tmpfs on /newroot/tmp/t/ws/.git/hooks: No such file or directory", ""},
		{"bwrap: Can't get type of source /elsewhere/x: No such file or directory", ""},
		{"bwrap: Can't mkdir parents for /var/lib/harness-gone-36/private: Read-only file system", "/var/lib/harness-gone-36/private"},
		// A root secret file removed with its directory still there (seen
		// in CI: another process's file under /var/lib renamed away):
		// bubblewrap makes the mask's mount point, a file, in the
		// read-only root.
		{"bwrap: Can't create file at /var/lib/harness-gone-36/staged: Read-only file system", "/var/lib/harness-gone-36/staged"},
		{"bwrap: Can't mkdir /var/lib/harness-gone-36/private: Read-only file system", "/var/lib/harness-gone-36/private"},
		// The CI run of 40645a1 (toolexec, as an ordinary user): a socket
		// of another test, masked, removed before bubblewrap bound its mask.
		{"bwrap: Can't create file at /var/tmp/harness-gone-36/agent.sock: Read-only file system", "/var/tmp/harness-gone-36/agent.sock"},
		// make test at load 10 (compose, as root, danger-full-access):
		// the same socket's directory the command may not write.
		{"bwrap: Can't create file at /var/tmp/harness-gone-36/agent.sock: Permission denied", "/var/tmp/harness-gone-36/agent.sock"},
	} {
		path, ok := subproc.Vanished(m.msg, c)
		assert.True(t, ok, m.msg)
		assert.Equal(t, m.path, path, m.msg)
	}
	// .ci/run of c1db254 (execsandbox, as root, a world of uid 1000):
	// another test's socket, masked, removed and made again before the
	// failure was judged: a change all the same.
	again := filepath.Join(t.TempDir(), "named.sock")
	require.NoError(t, os.WriteFile(again, nil, 0o600))
	c.MaskedSockets = append(c.MaskedSockets, again)
	path, ok := subproc.Vanished("bwrap: Can't create file at "+again+": Permission denied", c)
	assert.True(t, ok)
	assert.Equal(t, again, path)
	for _, msg := range []string{
		"bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.",
		"bwrap: Creating new namespace failed: No space left on device",
		"bwrap: setting up uid map: Permission denied",
		"bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
		"bwrap: Can't mkdir parents for /nonexistent/x: Read-only file system",
		"bwrap: Can't create file at /nonexistent/x: Read-only file system",
		"bwrap: Can't create file at /tmp/t/ws/.git/config: Read-only file system",
		"bwrap: Can't bind mount /oldroot/a on /newroot/a: Unable to mount source on destination: Permission denied",
		"Can't get type of source /a: No such file or directory",
		"",
	} {
		_, ok := subproc.Vanished(msg, c)
		assert.False(t, ok, msg)
	}
}

// renamedOver replaces path by a new file the way git rewrites its config
// (a lock file renamed over it) and returns the new content.
func renamedOver(t *testing.T, path string) string {
	t.Helper()
	body := fmt.Sprintf("[x]\n\ty = %d\n", time.Now().UnixNano())
	require.NoError(t, os.WriteFile(path+".lock", []byte(body), 0o644))
	require.NoError(t, os.Rename(path+".lock", path))
	return body
}

// TestBwrapChangedPath (issue 34): a protected path that another file was
// renamed over since the search, inside the git directory found (the host's
// git rewriting its config), is bound read-only as it is now, and the
// command starts and cannot write it; one renamed over elsewhere, or whose
// git directory is another now, or a symlink took the place of, or one
// removed, refuses the start with
// Status.Changed naming it, and the command does not run; one missing along
// with its holder, held since the search and removed since (a scratch
// repository), is accepted, reserved or protected; one missing while its
// holder is there, or moved elsewhere, or not held, is not.
func TestBwrapChangedPath(t *testing.T) {
	requireLandlock(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	repo := filepath.Join(ws, "repo")
	config := filepath.Join(repo, "config")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	renamedOver(t, config)
	found := statOf(t, config)
	start := func(t *testing.T, c subproc.Confinement) subproc.Outcome {
		t.Helper()
		c.WritableRoots = []string{ws}
		out, _, stderr := runBwrap(t.Context(), t, subproc.Spec{Command: "echo ran > ran", Dir: ws, Confine: &c}, time.Minute)
		t.Log(out.Status.Error, stderr)
		return out
	}
	protected := func(holder string) []subproc.Protected {
		return []subproc.Protected{{Path: config, Dev: found.Dev, Ino: found.Ino, Holder: holder}}
	}
	repoFound := statOf(t, repo)
	// inRepo is protected(repo) naming repo as the git directory config
	// lies in, with its identity as found.
	inRepo := func() []subproc.Protected {
		p := protected(repo)
		p[0].GitDir, p[0].GitDirDev, p[0].GitDirIno = repo, repoFound.Dev, repoFound.Ino
		return p
	}

	t.Run("renamed over, not in a git directory found", func(t *testing.T) {
		renamedOver(t, config)
		out := start(t, subproc.Confinement{Protected: protected(repo)})
		assert.False(t, out.Status.Started)
		assert.True(t, out.Status.Changed)
		assert.Contains(t, out.Status.Error, config)
		assert.NoFileExists(t, filepath.Join(ws, "ran"))
	})
	t.Run("its git directory swapped for another", func(t *testing.T) {
		// The repository moved aside and another put in its place (the
		// attack review of ff9821f): its config is another file on a
		// read-only bind, but the real one, aside, would be writable.
		// The config found is the one there now, alive aside: the one
		// found first was freed by the rename above, and a new file may
		// reuse its inode number (make test at load 13 did, and started).
		found = statOf(t, config)
		aside := filepath.Join(ws, "aside")
		require.NoError(t, os.Rename(repo, aside))
		require.NoError(t, os.Mkdir(repo, 0o755))
		renamedOver(t, config)
		out := start(t, subproc.Confinement{Protected: inRepo()})
		assert.False(t, out.Status.Started)
		assert.True(t, out.Status.Changed)
		assert.Contains(t, out.Status.Error, config)
		assert.NoFileExists(t, filepath.Join(ws, "ran"))
		require.NoError(t, os.RemoveAll(repo))
		require.NoError(t, os.Rename(aside, repo))
	})
	t.Run("renamed over in the git directory found", func(t *testing.T) {
		body := renamedOver(t, config)
		ran := filepath.Join(ws, "ran")
		c := subproc.Confinement{Protected: inRepo(), WritableRoots: []string{ws}}
		out, _, stderr := runBwrap(t.Context(), t, subproc.Spec{
			Command: "echo ran > ran; echo written >> repo/config", Dir: ws, Confine: &c,
		}, time.Minute)
		require.True(t, out.Status.Started, out.Status.Error)
		assert.FileExists(t, ran)
		assert.Contains(t, stderr, "Read-only file system")
		got, err := os.ReadFile(config)
		require.NoError(t, err)
		assert.Equal(t, body, string(got), "the new file, read-only in the view")
		require.NoError(t, os.Remove(ran))
	})
	t.Run("a symlink in its place", func(t *testing.T) {
		decoy := filepath.Join(ws, "decoy")
		require.NoError(t, os.WriteFile(decoy, []byte("decoy\n"), 0o644))
		require.NoError(t, os.Symlink("../decoy", config+".lock")) // relative: it leads to decoy in the view too
		require.NoError(t, os.Rename(config+".lock", config))
		out := start(t, subproc.Confinement{Protected: inRepo()})
		assert.False(t, out.Status.Started)
		assert.True(t, out.Status.Changed)
		assert.Contains(t, out.Status.Error, config)
		assert.NoFileExists(t, filepath.Join(ws, "ran"))
		renamedOver(t, config)
		found = statOf(t, config)
	})
	t.Run("removed, its holder there", func(t *testing.T) {
		require.NoError(t, os.Remove(config))
		out := start(t, subproc.Confinement{Protected: protected(repo)})
		assert.True(t, out.Status.Changed)
		assert.Contains(t, out.Status.Error, config)
		assert.NoFileExists(t, filepath.Join(ws, "ran"))
	})
	t.Run("removed without a holder", func(t *testing.T) {
		out := start(t, subproc.Confinement{Protected: protected("")})
		assert.True(t, out.Status.Changed)
		assert.NoFileExists(t, filepath.Join(ws, "ran"))
	})
	renamedOver(t, config)
	found = statOf(t, config)
	repoFound = statOf(t, repo)
	// hold holds repo, as the runner does just after its search.
	hold := func(t *testing.T) *subproc.Held {
		t.Helper()
		h, err := subproc.Hold([]subproc.Protected{{Path: repo, Dev: repoFound.Dev, Ino: repoFound.Ino}})
		require.NoError(t, err)
		t.Cleanup(h.Close)
		return h
	}
	withHolder := func(h *subproc.Held) subproc.Confinement {
		return subproc.Confinement{
			Protected: protected(repo),
			Reserved:  []subproc.Reserved{{Path: filepath.Join(repo, "hooks"), Dir: true, Holder: repo}, {Path: filepath.Join(repo, "commondir"), Holder: repo}},
			Held:      h,
		}
	}
	t.Run("moved away with its holder", func(t *testing.T) {
		// The attack review of ff9821f: the nested project moved aside
		// between the search and the start, nothing in its place; its
		// config, aside, is on the writable mount.
		h := hold(t)
		aside := filepath.Join(ws, "aside")
		require.NoError(t, os.Rename(repo, aside))
		out, _, stderr := runBwrap(t.Context(), t, subproc.Spec{
			Command: "echo ran > ran; echo written >> aside/config", Dir: ws,
			Confine: func() *subproc.Confinement { c := withHolder(h); c.WritableRoots = []string{ws}; return &c }(),
		}, time.Minute)
		t.Log(out.Status.Error, stderr)
		assert.False(t, out.Status.Started)
		assert.True(t, out.Status.Changed)
		assert.NoFileExists(t, filepath.Join(ws, "ran"))
		got, err := os.ReadFile(filepath.Join(aside, "config"))
		require.NoError(t, err)
		assert.NotContains(t, string(got), "written")
		require.NoError(t, os.Rename(aside, repo))
	})
	t.Run("missing with its holder, not held", func(t *testing.T) {
		aside := filepath.Join(ws, "aside")
		require.NoError(t, os.Rename(repo, aside))
		out := start(t, withHolder(nil))
		assert.True(t, out.Status.Changed)
		assert.NoFileExists(t, filepath.Join(ws, "ran"))
		require.NoError(t, os.Rename(aside, repo))
	})
	t.Run("a holder moved before it is held", func(t *testing.T) {
		aside := filepath.Join(ws, "aside")
		require.NoError(t, os.Rename(repo, aside))
		_, err := subproc.Hold([]subproc.Protected{{Path: repo, Dev: repoFound.Dev, Ino: repoFound.Ino}})
		assert.ErrorIs(t, err, unix.ENOENT)
		assert.ErrorIs(t, err, subproc.ErrHolderChanged)
		require.NoError(t, os.Mkdir(repo, 0o755))
		_, err = subproc.Hold([]subproc.Protected{{Path: repo, Dev: repoFound.Dev, Ino: repoFound.Ino}})
		assert.ErrorContains(t, err, "another file")
		assert.ErrorIs(t, err, subproc.ErrHolderChanged)
		require.NoError(t, os.Remove(repo))
		require.NoError(t, os.Rename(aside, repo))
	})
	t.Run("a holder that cannot be held is not a change", func(t *testing.T) {
		// The attack review of 686d28f: no descriptor left (EMFILE) was
		// a change, searched again 24 times; so is any failure but the
		// holder gone or another file. A directory the server cannot
		// search shows it without lowering the process's limits.
		if os.Geteuid() == 0 {
			t.Skip("root searches a directory of mode 0; run as an ordinary user (make test-unprivileged)")
		}
		locked := filepath.Join(ws, "locked")
		require.NoError(t, os.MkdirAll(filepath.Join(locked, "repo"), 0o755))
		st := statOf(t, filepath.Join(locked, "repo"))
		require.NoError(t, os.Chmod(locked, 0))
		defer func() { require.NoError(t, os.Chmod(locked, 0o755)) }()
		_, err := subproc.Hold([]subproc.Protected{{Path: filepath.Join(locked, "repo"), Dev: st.Dev, Ino: st.Ino}})
		assert.ErrorIs(t, err, unix.EACCES)
		assert.NotErrorIs(t, err, subproc.ErrHolderChanged)
	})
	t.Run("a holder held is not the command's", func(t *testing.T) {
		// A descriptor of the host's repo would reach its config past
		// the view's read-only bind.
		c := subproc.Confinement{Protected: protected(repo), Held: hold(t), WritableRoots: []string{ws}}
		out, stdout, stderr := runBwrap(t.Context(), t, subproc.Spec{
			Command: "ls -l /proc/self/fd/ /proc/1/fd/ 2>&1; for f in /proc/self/fd/* /proc/1/fd/*; do echo written >> $f/config; done 2>/dev/null; true",
			Dir:     ws, Confine: &c,
		}, time.Minute)
		require.True(t, out.Status.Started, out.Status.Error, stderr)
		t.Log(stdout)
		assert.NotContains(t, stdout, repo)
		got, err := os.ReadFile(config)
		require.NoError(t, err)
		assert.NotContains(t, string(got), "written")
	})
	t.Run("removed with its holder", func(t *testing.T) {
		h := hold(t)
		require.NoError(t, os.RemoveAll(repo))
		out := start(t, withHolder(h))
		require.True(t, out.Status.Started, out.Status.Error)
		assert.FileExists(t, filepath.Join(ws, "ran"))
		assert.NoDirExists(t, repo, "nothing was made for what vanished")
	})
}

// TestBwrapPlacementAfterBwrapExited (issue 34): when the sandbox's init
// dies making the view before it is placed in its cgroup, the run reports
// bubblewrap's own message, not the placement's "no such process".
func TestBwrapPlacementAfterBwrapExited(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	// A reserved directory in the read-only part of the view: bubblewrap
	// cannot make its mount point and exits.
	c := &subproc.Confinement{WritableRoots: []string{ws}, Reserved: []subproc.Reserved{{Path: "/nonexistent-harness-test/x", Dir: true}}}
	placed := func(pid int) error {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if unix.Kill(pid, 0) == unix.ESRCH {
				break
			}
		}
		// What the runner's cgroup placement says of a pid that is gone.
		return fmt.Errorf("cannot place the command in its cgroup: cgroup: adding pid %d: %w", pid, syscall.ESRCH)
	}
	out, err := subproc.RunBwrap(t.Context(), sandbox(t), subproc.Spec{Command: "true", Dir: ws, Confine: c}, time.Minute, 1<<20, placed, subproc.Watch{})
	require.NoError(t, err)
	assert.False(t, out.Status.Started)
	assert.False(t, out.Status.Changed)
	assert.True(t, strings.HasPrefix(out.Status.Error, subproc.SandboxNotStarted), out.Status.Error)
	assert.Contains(t, out.Status.Error, "bwrap: Can't mkdir")
	assert.Contains(t, out.Status.Error, "/nonexistent-harness-test")
	assert.NotContains(t, out.Status.Error, "no such process")
	assert.NotContains(t, out.Status.Error, "cgroup")
}
